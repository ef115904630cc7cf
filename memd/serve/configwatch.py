"""Follow the daemon's config file: a change on disk is loaded as on SIGHUP, and what runs
is said to differ from the file when the file could not be loaded or asks for a restart.

Polled (a stat every few seconds), not watched: the file may not exist yet (the built-in
defaults, until ``memd hooks install --sessions`` writes one), and editors replace it by
rename, which an inotify watch on the file itself would lose.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from memd.configfile import default_config_path

POLL_S = 2.0


class ConfigFile:
    """The file a daemon's config comes from, whether it changed, and how it differs."""

    def __init__(self, config_arg: str | Path | None, env: Mapping[str, str]) -> None:
        self.path = Path(config_arg).expanduser() if config_arg else default_config_path(env)
        self._seen = self.fingerprint()
        self.drift: str | None = None  # why what runs is not what the file says

    def fingerprint(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def changed(self) -> bool:
        """Whether the file changed (appeared, vanished) since last asked or read."""
        now = self.fingerprint()
        if now == self._seen:
            return False
        self._seen = now
        return True

    def read(self) -> None:
        """A reload is reading the file now: changes before this moment are in it."""
        self._seen = self.fingerprint()

    def failed(self, error: str) -> None:
        self.drift = (
            f"{self.path} changed but could not be loaded ({error}); still serving the "
            "config read before"
        )

    def needs_restart(self, what: str) -> None:
        self.drift = f"{what} in {self.path} take effect when memd restarts"

    def loaded(self) -> None:
        self.drift = None
