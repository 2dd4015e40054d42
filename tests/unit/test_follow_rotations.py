"""Rotations between two looks of a follower (issue 38, item 11): a rename-and-create, then a
copytruncate of the new file before the next poll, lost the lines written to the new file
in between (800 of 1,000 counted), silently. The follower is stopped (SIGSTOP) while the real
logrotate rotates, so the rotations surely fall between two of its polls; then it goes on
(SIGCONT) and must count every line once."""
import os
import signal
import time

import pytest

import test_follow as follow
from loadfactor import Slowdown

SEQUENCES = [('create', 'copytruncate'), ('create', 'create'), ('create', 'copytruncate', 'copytruncate'),
             ('create', 'create', 'copytruncate')]


@pytest.mark.parametrize('sequence', SEQUENCES, ids=['-'.join(s) for s in SEQUENCES])
def test_lines_of_a_file_rotated_again_before_the_next_poll_are_counted_once(tmp_path, sequence):
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(b'')
    per_file = follow.THRESHOLD // (len(sequence) + 2)
    with follow.Following(tmp_path, files, log) as follower:
        follower.mark()
        with open(str(log), 'ab') as handle:
            handle.write(follow.lines('203.0.113.7', per_file))
        follower.caught_up()
        written = per_file
        follower.proc.send_signal(signal.SIGSTOP)
        try:
            writer = open(str(log), 'ab')
            for how in sequence:
                follow.logrotate(tmp_path, log, how)
                if how == 'create':
                    writer.close()
                    writer = open(str(log), 'ab')
                writer.write(follow.lines('203.0.113.7', per_file))
                writer.flush()
                written += per_file
        finally:
            follower.proc.send_signal(signal.SIGCONT)
        for count, expected in ((follow.THRESHOLD - 1 - written, []), (1, [b'203.0.113.7'])):
            follower.mark()     # one line short (none counted twice), then the threshold (none lost)
            writer.write(follow.lines('203.0.113.7', count))
            writer.flush()
            follower.caught_up()
            assert follow.blocked(files) == expected, (written, os.listdir(str(log.parent)))
        writer.close()
        assert follower.stop() == 0


KINDS = ['create', 'copytruncate', 'create', 'copytruncate', 'copytruncate', 'create', 'create']


@pytest.mark.parametrize('reopen', [True, False], ids=['writer-reopens', 'writer-writes-on-the-renamed-file'])
def test_every_rotation_kind_blocks_within_2_s(tmp_path, reopen):
    """Issue 39, section 4: after each rotation (rename-and-create, copytruncate, and each after
    the other, within the windows), the scraper whose crossing line comes right after it is in
    the blocklist within 2 s, whether the writer reopens the log at once or writes on to the
    renamed file (nginx before its USR1). Each latency measured with a bounded wait."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(b'')
    took = []
    load = Slowdown()
    with follow.Following(tmp_path, files, log) as follower:
        writer = open(str(log), 'ab')
        for number, how in enumerate(KINDS):
            address = '203.0.113.%d' % (100 + number)
            follower.mark()
            writer.write(follow.lines(address, follow.THRESHOLD - 1))
            writer.flush()
            follower.caught_up()
            follow.logrotate(tmp_path, log, how)
            if how == 'create' and reopen:
                writer.close()
                writer = open(str(log), 'ab')
            crossing = time.time()
            writer.write(follow.lines(address, 1))
            writer.flush()
            follow.wait_for(lambda: address.encode() in follow.blocked(files), load.bound(10), 'blocking after ' + how)
            took.append((how, round(time.time() - crossing, 2)))
        writer.close()
        assert follower.stop() == 0
    assert all(seconds < load.bound(2.0) for how, seconds in took), (took, load.factor)
