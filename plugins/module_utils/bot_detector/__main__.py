# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python3 .../bot_detector LOG``: the package directory run as the host command (or
this file itself, ``python3 .../bot_detector/__main__.py LOG``, as the role's wrapper
does: Python then skips runpy's machinery)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

if __name__ == '__main__':
    import os
    import sys
    # Run as a directory or as this file, Python puts the package itself first on the path;
    # its parent instead, so that the package imports as ``bot_detector`` with its relative imports.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    from bot_detector.drivers.cli import main  # pylint: disable=import-error
    raise SystemExit(main())
