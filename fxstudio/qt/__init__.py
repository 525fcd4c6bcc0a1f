"""The Qt view: main window, canvas, panels and workers. It only turns gestures into core commands."""
