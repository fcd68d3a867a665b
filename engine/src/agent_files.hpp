// What a node agent (agent.cpp) trusts in its folder. The folder is opened
// once and held by descriptor; it must be a folder (not a link) owned by
// the agent's user and writable by nobody else, and everything after the
// open is relative to the descriptor (openat, fstatat, renameat, unlinkat),
// so renaming a folder above it redirects nothing. A request (and a signal
// or stop file) is taken only if it is a regular file owned by the agent's
// user, never through a link; and the folder's path must still name the
// folder held: once it does not (removed, or another folder put in its
// place), the agent stops, saying so.
#pragma once
#include <string>

namespace rooftop {

// "" if the folder held by fd is this user's own (owned by the effective
// uid, a folder, writable by no group or other user); else why not.
std::string untrusted_folder(int fd);

// "" while path still names the folder held by fd (same device and inode);
// else how it changed ("it is gone ...", "another folder has its name ...").
std::string folder_moved(const std::string& path, int fd);

// Opens the entry name of the folder held by dirfd for reading, if it is a
// regular file owned by this user (no link followed, a FIFO does not block
// the open): its descriptor (O_CLOEXEC). Else -1 and why: why is "" if the
// entry is gone (taken already), else the reason it is refused.
int open_request(int dirfd, const std::string& name, std::string& why);

// "" if the entry name of the folder held by dirfd is a regular file owned
// by this user (a link is not followed), "gone" if it does not exist, else
// why it is refused. For entries acted on by their name alone (sig-, stop).
std::string untrusted_entry(int dirfd, const std::string& name);

// Writes name in the folder held by dirfd whole: a temporary name (created
// anew, no link followed), then renamed. False (nothing left) on failure.
bool write_at(int dirfd, const std::string& name, const std::string& text);

// Rewrites the first bytes of the existing regular file name (no new block
// of the file system needed; no link followed). False on failure.
bool rewrite_at(int dirfd, const std::string& name, const std::string& text);

}  // namespace rooftop
