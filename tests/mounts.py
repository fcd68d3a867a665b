"""Real file systems for storage tests (tests/engine/test_storage.py,
tests/storage/): a fresh ext4 or ext2 image on a loop device, or a tmpfs,
mounted in a temporary directory and removed whatever happens. Mounting
needs root: as another user the test is skipped, saying why."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

TOOLS = {"ext4": "mkfs.ext4", "ext2": "mkfs.ext2"}


def skip_unless_can_mount(*tools: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a loop image or a tmpfs needs root")
    for tool in ("losetup", "mount", "umount", *tools):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian: e2fsprogs, mount)")


def run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def loop_mount(fstype: str, size_mib: int = 64):
    """A fresh `fstype` image on a loop device, mounted in a temporary
    directory: yields (mount point, loop device); unmounted, detached and
    removed whatever happens."""
    skip_unless_can_mount(TOOLS[fstype])
    with tempfile.TemporaryDirectory(prefix=f"rooftop-{fstype}-") as tmp:
        image, mnt = Path(tmp) / "image", Path(tmp) / "mnt"
        mnt.mkdir()
        with open(image, "wb") as f:
            f.truncate(size_mib << 20)
        # an inode per KiB (the minimum): timed metadata runs create files as
        # fast as the machine goes, and the default ratio ran out (ENOSPC)
        run(TOOLS[fstype], "-q", "-F", "-i", "1024", str(image))
        dev = run("losetup", "--find", "--show", str(image))
        try:
            run("mount", "-t", fstype, dev, str(mnt))
            try:
                yield mnt, dev
            finally:
                subprocess.run(["umount", str(mnt)], check=False)
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)


@contextlib.contextmanager
def tmpfs_mount(size_mib: int = 32):
    """A fresh tmpfs in a temporary directory (yields its path)."""
    skip_unless_can_mount()
    with tempfile.TemporaryDirectory(prefix="rooftop-tmpfs-") as tmp:
        run("mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", tmp)
        try:
            yield Path(tmp)
        finally:
            subprocess.run(["umount", tmp], check=False)
