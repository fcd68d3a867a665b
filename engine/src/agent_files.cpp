#include "agent_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rooftop {

namespace {

std::string mode_string(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// "" if st is a regular file of this user; else why not.
std::string untrusted_file(const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (st.st_uid != geteuid())
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this agent's user (uid " +
           std::to_string(geteuid()) + ")";
  return "";
}

bool write_all(int fd, const std::string& text) {
  size_t at = 0;
  while (at < text.size()) {
    ssize_t n = pwrite(fd, text.data() + at, text.size() - at, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string untrusted_folder(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return std::string("cannot be looked at: ") + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "not a folder";
  if (st.st_uid != geteuid())
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this agent's user (uid " +
           std::to_string(geteuid()) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by other users (mode " + mode_string(st.st_mode) + ")";
  return "";
}

std::string folder_moved(const std::string& path, int fd) {
  struct stat held, now;
  if (fstat(fd, &held) != 0) return std::string("it cannot be looked at: ") + std::strerror(errno);
  if (stat(path.c_str(), &now) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return "it is gone (removed, or a folder above it renamed)";
    return std::string("its path cannot be looked at: ") + std::strerror(errno);
  }
  if (now.st_dev != held.st_dev || now.st_ino != held.st_ino)
    return "another folder has its name now (it or a folder above it was renamed or replaced)";
  return "";
}

int open_request(int dirfd, const std::string& name, std::string& why) {
  why.clear();
  int fd = openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return -1;
    why = errno == ELOOP ? "a symbolic link" : std::string("cannot be opened: ") + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) why = std::string("cannot be looked at: ") + std::strerror(errno);
  else why = untrusted_file(st);
  if (!why.empty()) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string untrusted_entry(int dirfd, const std::string& name) {
  struct stat st;
  if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? "gone" : std::string("cannot be looked at: ") + std::strerror(errno);
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  return untrusted_file(st);
}

bool write_at(int dirfd, const std::string& name, const std::string& text) {
  std::string tmp = name + ".tmp";
  unlinkat(dirfd, tmp.c_str(), 0);  // a leftover of a failed write: created anew below
  int fd = openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = write_all(fd, text);
  ok = close(fd) == 0 && ok;
  if (ok && renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) == 0) return true;
  unlinkat(dirfd, tmp.c_str(), 0);
  return false;
}

bool rewrite_at(int dirfd, const std::string& name, const std::string& text) {
  int fd = openat(dirfd, name.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && write_all(fd, text);
  return close(fd) == 0 && ok;
}

}  // namespace rooftop
