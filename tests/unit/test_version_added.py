"""Every module, plugin, option and return value added after the first release, 1.0.0,
names the collection release that added it (``version_added``), as the Ansible community's
collection requirements ask; what 1.0.0 had does not. RELEASED is what 1.0.0 documented
(the release of changelogs/changelog.yaml); the docs are read as users get them, through
ansible-doc on the checkout."""
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIRST = '1.0.0'

# (plugin type, name): (options, return values) of release 1.0.0; a dotted name is a
# suboption or a returned dict's key. Options renamed since then kept their old name as an
# alias (exclusions, server_ip).
RELEASED = {
    ('module', 'bot_detector'): (
        {'activity_log', 'addresses', 'blocklist', 'crawlers', 'dns_timeout', 'exclusions', 'ipv6_prefix',
         'job_prefixes', 'log', 'mode', 'now', 'report_floor', 'rotated', 'rules', 'search_engine', 'seek',
         'seek_margin', 'server_ip', 'threshold', 'top'},
        {'allow_listed', 'already_blocked', 'ansible_facts', 'ansible_facts.bot_detector', 'blocked',
         'blocked.address', 'blocked.count', 'blocked.window', 'counts', 'execution_time', 'local_blocks',
         'messages', 'rules', 'scans', 'skipped_invalid', 'verifications', 'windows'}),
    ('module', 'address_list'): ({'entries', 'path'}, {'added'}),
    ('filter', 'fleet_totals'): (
        {'_input', 'hostvars', 'result_var', 'sync', 'threshold'},
        {'_value', '_value.decisions', '_value.hosts', '_value.missing', '_value.offenders', '_value.sync',
         '_value.threshold', '_value.totals'}),
}


def version_key(version):
    return tuple(int(part) for part in version.split('.'))


def ansible_doc(tmp_path, args):
    link = tmp_path / 'ansible_collections' / 'jobboard'
    link.mkdir(parents=True, exist_ok=True)
    if not (link / 'bot_detector').exists():
        (link / 'bot_detector').symlink_to(REPO)
    executable = os.path.join(os.path.dirname(sys.executable), 'ansible-doc')
    if not os.path.exists(executable):
        executable = shutil.which('ansible-doc')
    assert executable, 'ansible-doc is not installed (make setup)'
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path))
    env.pop('ANSIBLE_CONFIG', None)
    proc = subprocess.run([executable] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def entries(tree, children):
    """(dotted name, its names including aliases, its doc) of each entry of an options or
    return tree, nested ones included."""
    found = []

    def walk(branch, prefix):
        for name, doc in (branch or {}).items():
            names = {prefix + name} | {prefix + alias for alias in doc.get('aliases') or []}
            found.append((prefix + name, names, doc))
            walk(doc.get(children), prefix + name + '.')
    walk(tree, '')
    return found


def plugins(tmp_path):
    listed = ansible_doc(tmp_path, ['--json', '-l', 'jobboard.bot_detector'])
    names = [('module', name) for name in listed]
    names += [('filter', name) for name in ansible_doc(tmp_path, ['--json', '-t', 'filter', '-l', 'jobboard.bot_detector'])]
    return [(kind, fqcn.split('.')[-1]) for kind, fqcn in names]


def test_every_plugin_of_1_0_0_is_still_known(tmp_path):
    assert set(RELEASED) <= set(plugins(tmp_path))


def test_what_came_after_1_0_0_says_when(tmp_path):
    found = plugins(tmp_path)
    assert len(found) >= 5, found
    missing = []
    docs = {}
    for kind in sorted(set(kind for kind, name in found)):
        docs.update(('%s %s' % (kind, fqcn.split('.')[-1]), doc) for fqcn, doc in ansible_doc(
            tmp_path, ['--json', '-t', kind] + ['jobboard.bot_detector.' + n for k, n in found if k == kind]).items())
    for kind, name in found:
        doc = docs['%s %s' % (kind, name)]
        released = RELEASED.get((kind, name))
        plugin_added = str(doc['doc'].get('version_added', ''))
        if released is None:
            if not plugin_added or version_key(plugin_added) <= version_key(FIRST):
                missing.append('%s %s: added after %s, version_added %r' % (kind, name, FIRST, plugin_added))
            continue    # everything in a plugin added later came with it
        for part, tree, children, old in (('option', doc['doc'].get('options'), 'suboptions', released[0]),
                                          ('return value', doc.get('return'), 'contains', released[1])):
            added_of = {}
            for dotted, names, entry in entries(tree, children):
                added = str(entry.get('version_added', ''))
                parent = added_of.get(dotted.rpartition('.')[0], '')
                if not added and parent and version_key(parent) > version_key(FIRST):
                    added = parent      # what came with a later entry needs no date of its own
                added_of[dotted] = added
                if names & old:
                    if added and version_key(added) > version_key(FIRST):
                        missing.append('%s %s, %s %s: in %s, yet version_added %s' % (kind, name, part, dotted, FIRST, added))
                elif not added or version_key(added) <= version_key(FIRST):
                    missing.append('%s %s, %s %s: added after %s, version_added %r' % (kind, name, part, dotted, FIRST, added))
    assert not missing, '\n'.join(missing)
