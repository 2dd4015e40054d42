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
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[0] = os.path.dirname(here)
    if os.path.basename(here) != 'bot_detector':
        # A copy under another folder name: this directory imported as the package bot_detector
        # (never another package of that name beside it).
        import importlib.util
        spec = importlib.util.spec_from_file_location('bot_detector', os.path.join(here, '__init__.py'),
                                                      submodule_search_locations=[here])
        sys.modules['bot_detector'] = package = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(package)
    from bot_detector.drivers.cli import main  # pylint: disable=import-error
    raise SystemExit(main())
