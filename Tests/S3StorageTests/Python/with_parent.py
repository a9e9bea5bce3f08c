"""Runs a server program until the process that started this one ends.

Usage: with_parent.py PROGRAM [ARGS...]

A test process can end without running its exit handlers, and moto_server ignores
SIGTERM; this keeps the servers the tests start from outliving them. SIGTERM to this
process, or the end of its parent, kills the program.
"""
import os
import signal
import subprocess
import sys
import time

parent = os.getppid()
child = subprocess.Popen(sys.argv[1:])


def stop(*_):
    if child.poll() is None:
        child.kill()
        child.wait()
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
while child.poll() is None and os.getppid() == parent:
    time.sleep(0.5)
stop()
