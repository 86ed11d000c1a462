"""A closed reader costs no measurement: ``rtreport collect 2>&1 | head`` closes the pipe after a few lines, and the
next progress line would raise ``BrokenPipeError`` in the middle of the run. ``survive_closed_output`` wraps
stdout and stderr so that the first write to a closed pipe points that file descriptor at /dev/null instead
(processes started after it inherit the quiet one) and the run goes on to write its file; what it would have
said is lost, as the reader asked."""

from __future__ import annotations

import os
import sys


class _QuietOnClose:
    """A text stream that becomes /dev/null when its reader goes away; otherwise the stream it wraps."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def survive_closed_output() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` (once) so that a closed reader silences them instead of stopping."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _QuietOnClose):
            setattr(sys, name, _QuietOnClose(stream))
