"""The incremental state's file: what it keeps, how it is written, and that a damaged or
foreign one is never trusted. (Runs with a state against cold runs and the reference:
test_incremental.py.)"""
import binascii
import json
import os
import random
import stat
import struct
from collections import Counter

import pytest

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import state, saves

ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Chatham']
LOG = '/var/log/nginx/access.log'


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
    again = saves.loads(original.dumps(), LOG)
    assert again.dumps() == original.dumps()
    assert again.files[0].counts.get(original.stamps[0])[b'\xff\x00odd'] == 2
    assert again.files[0].counts.get(original.stamps[0])[(b'66.249.66.1', 'google')] == 7
    assert (again.files[1].gzip, again.files[1].offset, again.files[0].head) == (True, 777, original.files[0].head)
    assert again.dumps() == original.dumps()        # parsed sections are written back the same


def test_prune_drops_the_hours_no_later_run_can_have():
    st = sample_state()
    st.prune(st.now + 2 * 3600)     # two hours later, the first two tracked hours are out of play
    assert st.stamps == state.stamps_in_play(st.now + 2 * 3600, st.horizon)
    assert not st.files[0].counts.stamps() and not st.files[1].counts.stamps()


def header_and_sections(data):
    cut = data.index(b'\n')
    return json.loads(data[:cut]), data[cut + 1:]


def with_header(data, change):
    header, body = header_and_sections(data)
    change(header)
    return json.dumps(header).encode() + b'\n' + body


def forged_section(data, raw, part='counts'):
    """The first section's ``part`` ('top' or 'counts') replaced by the bytes ``raw``, its
    length and CRC made to fit: damage the checksum cannot see, found when it is parsed."""
    header, body = header_and_sections(data)
    first = header['files'][0]['sections'][0]
    top_length, counts_length = first['top'][0], first['counts'][0]
    if part == 'top':
        body = raw + body[top_length:]
    else:
        body = body[:top_length] + raw + body[top_length + counts_length:]
    first[part] = [len(raw), binascii.crc32(raw)]
    return json.dumps(header).encode() + b'\n' + body


def counts_part(keys, counts, claims=()):
    """A counts part written by hand: claims (JSON), keys, 64-bit little-endian counts."""
    return json.dumps(list(claims)).encode() + b'\n' + keys + b'\n' + b''.join(struct.pack('<Q', n) for n in counts)


def top_part(content):
    return json.dumps(content).encode() + b'\n'


def damaged_files():
    good = sample_state().dumps()
    stamp = sample_state().stamps[0].decode()
    flipped = bytearray(good)
    flipped[-5] ^= 1
    return {
        'truncated': good[:-40],
        'a byte flipped': bytes(flipped),
        'not json': b'cos\nsystem\n(S"echo pwned"\ntR.',        # a pickle: never unpickled
        'other format': with_header(good, lambda h: h.update(format='something else')),
        'other log': with_header(good, lambda h: h.update(log='/var/log/other.log')),
        'untracked stamp': with_header(good, lambda h: h['files'][0]['sections'][0].update(stamp='01/Jan/2020:00')),
        'bad stamp': with_header(good, lambda h: h['stamps'].append('yesterday')),
        'no files': with_header(good, lambda h: h.update(files=[])),
        'three files': with_header(good, lambda h: h.update(files=h['files'] * 3)),
        'offset as text': with_header(good, lambda h: h['files'][0].update(offset='4096')),
        'negative offset': with_header(good, lambda h: h['files'][0].update(offset=-1)),
        'head not hex': with_header(good, lambda h: h['files'][0].update(head='zz')),
        'now missing': with_header(good, lambda h: h.pop('now')),
        'bytes after': good + b'{}\n',
        # Deeper than Python's json reads (RecursionError, not ValueError): open, and closed in a field.
        'nested deep': b'[' * 100000 + b'\n' + header_and_sections(good)[1],
        'a field nested deep': b'{"format": %s}\n' % (b'[' * 100000 + b']' * 100000) + header_and_sections(good)[1],
        'a stamp twice': with_header(good, lambda h: h['files'][0]['sections'].__setitem__(1, dict(
            h['files'][0]['sections'][1], stamp=stamp))),
    }


def forged_sections():
    good = sample_state().dumps()
    return {
        'zero count': forged_section(good, counts_part(b'a', [0])),
        'counts cut short': forged_section(good, counts_part(b'a', [5])[:-3]),
        'more keys than counts': forged_section(good, counts_part(b'a b', [1])),
        'keys but no counts': forged_section(good, counts_part(b'a', [])),
        'key twice': forged_section(good, counts_part(b'a a', [1, 2])),
        'no keys line': forged_section(good, b'[]\n'),
        'claim twice': forged_section(good, counts_part(b'', [], [['a', 'g', 1], ['a', 'g', 2]])),
        'bad claim': forged_section(good, counts_part(b'', [], [['a', 'g', '1']])),
        'bool claim count': forged_section(good, counts_part(b'', [], [['a', 'g', True]])),
        'wide claim key': forged_section(good, counts_part(b'', [], [['\u20ac', 'g', 1]])),
        'claims not a list': forged_section(good, b'{}\na\n' + struct.pack('<Q', 1)),
        'claims not json': forged_section(good, b'cos\na\n' + struct.pack('<Q', 1)),
        'claims nested deep': forged_section(good, b'[' * 100000 + b'\na\n' + struct.pack('<Q', 1)),
    }


def test_a_hand_written_section_reads_back():
    """The counts part's layout as the module's docstring gives it, written here by hand."""
    st = sample_state()
    raw = counts_part(b'1.2.3.4 \xff\x00odd', [5, 2**40], [['66.249.66.1', 'google', 7]])
    loaded = saves.loads(forged_section(st.dumps(), raw), LOG)
    assert loaded.files[0].counts.get(st.stamps[0]) == Counter(
        {b'1.2.3.4': 5, b'\xff\x00odd': 2**40, (b'66.249.66.1', 'google'): 7})


def forged_tops():
    good = sample_state().dumps()
    return {
        'count as text': forged_section(good, top_part({'complete': True, 'keys': ['a'], 'counts': ['5']}), 'top'),
        'complete as text': forged_section(good, top_part({'complete': 'yes', 'keys': ['a'], 'counts': [5]}), 'top'),
        'more keys': forged_section(good, top_part({'complete': False, 'keys': ['a', 'b'], 'counts': [5]}), 'top'),
        'not an object': forged_section(good, top_part([]), 'top'),
        'nested deep': forged_section(good, b'[' * 100000 + b'\n', 'top'),
    }


@pytest.mark.parametrize('name', sorted(damaged_files()))
def test_a_damaged_state_is_refused(name):
    with pytest.raises(state.StateError):
        saves.loads(damaged_files()[name], LOG)


@pytest.mark.parametrize('name', sorted(forged_tops()))
def test_damaged_first_entries_are_refused_when_read(name):
    loaded = saves.loads(forged_tops()[name], LOG)
    with pytest.raises(state.StateError):
        loaded.files[0].counts.prefix(loaded.stamps[0])


def test_an_untouched_hour_is_ranked_from_its_first_entries():
    counts = Counter(dict((b'10.0.%d.%d' % (i // 256, i % 256), 1 + i % 977) for i in range(5000)))
    st = sample_state()
    st.files[0].counts = state.Counts({st.stamps[0]: counts})
    loaded = saves.loads(st.dumps(), LOG)
    prefix = loaded.files[0].counts.prefix(st.stamps[0])
    assert len(prefix) == state.TOP_ENTRIES and not prefix.complete
    assert list(prefix.items()) == sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:state.TOP_ENTRIES]
    assert prefix.full() == counts
    assert loaded.dumps() == st.dumps()


@pytest.mark.parametrize('name', sorted(forged_sections()))
def test_a_damaged_section_is_refused_when_read(name):
    loaded = saves.loads(forged_sections()[name], LOG)
    with pytest.raises(state.StateError):
        loaded.files[0].counts.get(loaded.stamps[0])


def test_load_ignores_what_it_cannot_trust_with_one_warning(tmp_path):
    directory = str(tmp_path / 'state')
    path = saves.state_path(directory, LOG)
    assert saves.load(directory, LOG) == (None, None)                   # no state yet: no warning
    assert saves.save(directory, [sample_state()]) is None
    loaded, warning = saves.load(directory, LOG)
    assert warning is None and loaded.dumps() == sample_state().dumps()
    with open(path, 'wb') as handle:
        handle.write(damaged_files()['truncated'])
    loaded, warning = saves.load(directory, LOG)
    assert loaded is None and warning.startswith('state file %s ignored: ' % path) and 'cut short' in warning
    os.unlink(path)
    os.symlink('/etc/passwd', path)
    loaded, warning = saves.load(directory, LOG)
    assert loaded is None and 'ignored' in warning
    os.unlink(path)
    os.mkfifo(path)                                                     # never blocks
    loaded, warning = saves.load(directory, LOG)
    assert loaded is None and 'not a regular file' in warning


def test_a_state_of_an_earlier_format_is_dropped_without_a_warning(tmp_path):
    """After an upgrade the first run starts cold, quietly; a format no version wrote is a
    foreign file, and warned about."""
    directory = str(tmp_path / 'state')
    assert saves.save(directory, [sample_state()]) is None
    path = saves.state_path(directory, LOG)
    good = open(path, 'rb').read()
    for fmt, warned in (('jobboard.bot_detector state 1', False), ('something else', True)):
        with open(path, 'wb') as handle:
            handle.write(with_header(good, lambda h: h.update(format=fmt)))
        loaded, warning = saves.load(directory, LOG)
        assert loaded is None and (warning is not None) == warned, fmt


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to give the file to another user')
def test_another_users_state_is_ignored(tmp_path):
    directory = str(tmp_path / 'state')
    assert saves.save(directory, [sample_state()]) is None
    os.chown(saves.state_path(directory, LOG), 65534, 65534)
    loaded, warning = saves.load(directory, LOG)
    assert loaded is None and 'owned by user 65534' in warning


def test_save_is_private_atomic_and_removes_only_dead_runs_leftovers(tmp_path):
    directory = tmp_path / 'state'
    dead = 4194304 + 12345          # above pid_max: no such process
    assert saves.save(str(directory), [sample_state()]) is None
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    path = saves.state_path(str(directory), LOG)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (directory / ('.tmp-%d-x.json' % dead)).write_text('half')
    (directory / ('.tmp-%d-y.json' % os.getpid())).write_text('ours, being written')
    inode = os.stat(path).st_ino
    assert saves.save(str(directory), [sample_state()]) is None
    assert os.stat(path).st_ino != inode                                 # replaced, not rewritten in place
    assert sorted(os.listdir(str(directory))) == sorted([os.path.basename(path), '.tmp-%d-y.json' % os.getpid()])


@pytest.mark.parametrize('odd', ['.tmp-2\u00b2-x.json', '.tmp-\u0662-x.json', '.tmp-99999999999999999999-x.json', '.tmp--1-x.json',
                                 '.tmp-0x10-x.json'])
def test_a_leftovers_name_that_is_no_pid_is_left_and_breaks_nothing(tmp_path, odd):
    """A name in the state directory like a leftover's but whose PID is no number a process could
    have (digits of other scripts, too large for a PID): kept, and the save goes on."""
    directory = tmp_path / 'state'
    assert saves.save(str(directory), [sample_state()]) is None
    (directory / odd).write_text('someone else\'s')
    assert saves.save(str(directory), [sample_state()]) is None
    assert (directory / odd).read_text() == 'someone else\'s'


def test_state_paths_are_distinct_and_short():
    paths = ['/a/b', '/a%2Fb', '/a_b', '/a/b/', 'x' * 300, 'x' * 299 + 'y']
    names = [saves.state_path('/s', p) for p in paths]
    assert len(set(names)) == len(names)
    assert all(len(os.path.basename(n)) < 255 for n in names)
