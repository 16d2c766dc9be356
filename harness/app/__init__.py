"""The roof: the `vpo` command line (cli, commands/) and the drivers that combine the layers below
(demo, rescore, val_eval). Nothing below imports from here (docs/layers.md).
"""
