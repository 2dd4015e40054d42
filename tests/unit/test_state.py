"""The incremental state's file: what it keeps, how it is written, and that a damaged or
foreign one is never trusted. (Runs with a state against cold runs and the reference:
test_incremental.py.)"""
import json
import os
import random
import stat
import time
from collections import Counter

import pytest

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector import clock, state

ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Chatham']
LOG = '/var/log/nginx/access.log'


@pytest.fixture
def zone():
    old = os.environ.get('TZ')

    def switch(tz):
        os.environ['TZ'] = tz
        time.tzset()
    yield switch
    if old is None:
        os.environ.pop('TZ', None)
    else:
        os.environ['TZ'] = old
    time.tzset()


@pytest.mark.parametrize('tz', ZONES)
def test_stamps_in_play_are_every_hour_a_later_run_can_have(zone, tz):
    """Every instant's hour stamp from an hour before ``now`` to the horizon, sampled each
    minute, across DST nights and half-hour zones: the 5-minute sampling misses none."""
    zone(tz)
    rng = random.Random(tz)
    nights = [1774747800, 1792888200, 1793518200, 1775314800, 1791561600]    # DST switches of 2026
    for now in nights + [1767225600 + rng.randrange(365 * 86400) for dummy in range(3)]:
        for horizon in (now + 2 * 3600, now + state.HORIZON):
            expected = []
            for epoch in range(now - 3600, horizon + 1, 60):
                stamp = clock.hour_stamp(epoch).encode()
                if stamp not in expected:
                    expected.append(stamp)
            assert state.stamps_in_play(now, horizon) == expected


def sample_state():
    now = 1795234423
    stamps = state.stamps_in_play(now, now + state.HORIZON)
    counts = {stamps[0]: Counter({b'1.2.3.4': 5, b'\xff\x00odd': 2, (b'66.249.66.1', 'google'): 7}),
              stamps[1]: Counter({b'2001:db8::1': 1000})}
    files = [state.Segment(2049, 1234, b'10.0.0.1 - - [21/Nov/2026:03', 4096, counts=counts),
             state.Segment(2049, 99, b'\x1f\x8b\x08', 777, gzip=True, counts={stamps[1]: Counter({b'5.6.7.8': 3})})]
    return state.LogState(LOG, {'rules': 'spec', 'seek_margin': 600}, now, now + state.HORIZON, stamps, files)


def test_round_trip_keeps_every_byte_and_claim():
    original = sample_state()
    again = state.loads(original.dumps(), LOG)
    assert again.dumps() == original.dumps()
    assert again.files[0].counts[original.stamps[0]][b'\xff\x00odd'] == 2
    assert again.files[0].counts[original.stamps[0]][(b'66.249.66.1', 'google')] == 7
    assert (again.files[1].gzip, again.files[1].offset, again.files[0].head) == (True, 777, original.files[0].head)


def test_prune_drops_the_hours_no_later_run_can_have():
    st = sample_state()
    st.prune(st.now + 2 * 3600)     # two hours later, the first two tracked hours are out of play
    assert st.stamps == state.stamps_in_play(st.now + 2 * 3600, st.horizon)
    assert not st.files[0].counts and not st.files[1].counts


def damaged_texts():
    good = json.loads(sample_state().dumps())
    stamp = good['stamps'][0]

    def changed(fn):
        doc = json.loads(json.dumps(good))
        fn(doc)
        return json.dumps(doc)
    return {
        'truncated': sample_state().dumps()[:-40],
        'not json': 'cos\nsystem\n(S"echo pwned"\ntR.',        # a pickle: never unpickled
        'other format': changed(lambda d: d.update(format='something else')),
        'other log': changed(lambda d: d.update(log='/var/log/other.log')),
        'count as text': changed(lambda d: d['files'][0]['counts'][stamp].__setitem__(1, '5')),
        'negative count': changed(lambda d: d['files'][0]['counts'][stamp].__setitem__(1, -5)),
        'bool count': changed(lambda d: d['files'][0]['counts'][stamp].__setitem__(1, True)),
        'odd list': changed(lambda d: d['files'][0]['counts'][stamp].pop()),
        'key twice': changed(lambda d: d['files'][0]['counts'][stamp].extend(d['files'][0]['counts'][stamp][:2])),
        'untracked stamp': changed(lambda d: d['files'][0]['counts'].__setitem__('01/Jan/2020:00', ['1.1.1.1', 1])),
        'bad stamp': changed(lambda d: d['stamps'].append('yesterday')),
        'no files': changed(lambda d: d.update(files=[])),
        'three files': changed(lambda d: d.update(files=d['files'] * 3)),
        'offset as text': changed(lambda d: d['files'][0].update(offset='4096')),
        'negative offset': changed(lambda d: d['files'][0].update(offset=-1)),
        'head not hex': changed(lambda d: d['files'][0].update(head='zz')),
        'now missing': changed(lambda d: d.pop('now')),
        'wide key': changed(lambda d: d['files'][0]['counts'][stamp].__setitem__(0, '\u20ac')),
    }


@pytest.mark.parametrize('name', sorted(damaged_texts()))
def test_a_damaged_state_is_refused(name):
    with pytest.raises(state.StateError):
        state.loads(damaged_texts()[name], LOG)


def test_load_ignores_what_it_cannot_trust_with_one_warning(tmp_path):
    directory = str(tmp_path / 'state')
    path = state.state_path(directory, LOG)
    assert state.load(directory, LOG) == (None, None)                   # no state yet: no warning
    assert state.save(directory, [sample_state()]) is None
    loaded, warning = state.load(directory, LOG)
    assert warning is None and loaded.dumps() == sample_state().dumps()
    with open(path, 'w') as handle:
        handle.write(damaged_texts()['truncated'])
    loaded, warning = state.load(directory, LOG)
    assert loaded is None and warning.startswith('state file %s ignored: not JSON' % path)
    os.unlink(path)
    os.symlink('/etc/passwd', path)
    loaded, warning = state.load(directory, LOG)
    assert loaded is None and 'ignored' in warning
    os.unlink(path)
    os.mkfifo(path)                                                     # never blocks
    loaded, warning = state.load(directory, LOG)
    assert loaded is None and 'not a regular file' in warning


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to give the file to another user')
def test_another_users_state_is_ignored(tmp_path):
    directory = str(tmp_path / 'state')
    assert state.save(directory, [sample_state()]) is None
    os.chown(state.state_path(directory, LOG), 65534, 65534)
    loaded, warning = state.load(directory, LOG)
    assert loaded is None and 'owned by user 65534' in warning


def test_save_is_private_atomic_and_removes_only_dead_runs_leftovers(tmp_path):
    directory = tmp_path / 'state'
    dead = 4194304 + 12345          # above pid_max: no such process
    assert state.save(str(directory), [sample_state()]) is None
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    path = state.state_path(str(directory), LOG)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (directory / ('.tmp-%d-x.json' % dead)).write_text('half')
    (directory / ('.tmp-%d-y.json' % os.getpid())).write_text('ours, being written')
    inode = os.stat(path).st_ino
    assert state.save(str(directory), [sample_state()]) is None
    assert os.stat(path).st_ino != inode                                 # replaced, not rewritten in place
    assert sorted(os.listdir(str(directory))) == sorted([os.path.basename(path), '.tmp-%d-y.json' % os.getpid()])


def test_state_paths_are_distinct_and_short():
    paths = ['/a/b', '/a%2Fb', '/a_b', '/a/b/', 'x' * 300, 'x' * 299 + 'y']
    names = [state.state_path('/s', p) for p in paths]
    assert len(set(names)) == len(names)
    assert all(len(os.path.basename(n)) < 255 for n in names)
