"""The roof: the `vpo` command line and the drivers that combine the layers below; nothing below
imports from here (the layer table: docs/layers.md).
"""
