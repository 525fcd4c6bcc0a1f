"""The edit engine behind ``Document``: primitive graph changes with exact inverses, the ops of
design §4 built from them, validation and topological moves. Nodes are referred to by stable id.
"""
