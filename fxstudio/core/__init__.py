"""The Qt-free core: documents, commands, loading, layout, runs and export."""
