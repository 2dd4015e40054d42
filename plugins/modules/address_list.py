#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: address_list
short_description: Ensure entries are lines of an address list, appending only
version_added: 1.0.0
description:
  - Ensures that each of O(entries) is a line of the list file O(path), such as the exclusion list or the
    blocklist, by appending the missing ones in order.
  - The file is created (mode 0644) when absent. An existing file is only ever appended to, under the same
    exclusive lock the detector uses. Lines added by hand are never removed, rewritten or reordered, and a
    missing final newline is added before the first appended entry.
  - An entry counts as present when a line equals it, blanks around the line ignored. This is exact matching,
    not the detector's substring search.
author:
  - Bot Detector maintainers (@jobboard)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: Shows the appended lines.
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
options:
  path:
    description: The list file.
    type: path
    required: true
  entries:
    description: The entries, one line each, that must be in the file.
    type: list
    elements: str
    required: true
notes:
  - Removing entries is deliberately not offered; edit the file by hand for that.
'''

EXAMPLES = r'''
- name: Never block the office and the monitoring service
  jobboard.bot_detector.address_list:
    path: /etc/ipexcludedlist.txt
    entries:
      - 198.51.100.23
      - 2001:db8:10::5
'''

RETURN = r'''
added:
  description: The entries appended (in check mode, that would be appended), in order.
  returned: always
  type: list
  elements: str
  sample: [198.51.100.23]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists.content import ensure_lines


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            entries=dict(type='list', elements='str', required=True),
        ),
        supports_check_mode=True,
    )
    path = module.params['path']
    try:
        added = ensure_lines(path, module.params['entries'], check_mode=module.check_mode)
    except BotDetectorError as exc:
        module.fail_json(msg=exc.message)
    result = dict(changed=bool(added), added=added)
    if module._diff and added:
        result['diff'] = {'prepared': '--- %s\n+++ %s\n%s' % (path, path, ''.join('+%s\n' % a for a in added))}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
