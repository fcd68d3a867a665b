#include "token.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rooftop {

namespace {

std::string mode_text(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(m & 07777));
  return b;
}

// Refuses a file another user owns or may read or write.
void check_private(int fd, const std::string& path, const std::string& what) {
  struct stat st;
  if (fstat(fd, &st) != 0) throw UsageError(what + " " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw UsageError(what + " " + path + " is not a regular file");
  if (st.st_uid != geteuid())
    throw UsageError(what + " " + path + " is owned by uid " + std::to_string(st.st_uid) +
                     ", not by this user (uid " + std::to_string(geteuid()) + ")");
  if (st.st_mode & 077)
    throw UsageError(what + " " + path + " has mode " + mode_text(st.st_mode) +
                     ": other users may read it; make it private (chmod 600 " + path + ")");
}

std::string first_line(int fd) {
  std::string text;
  char buf[1024];
  for (ssize_t n; text.size() < 65536 && (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      throw UsageError(std::string("cannot read the token: ") + std::strerror(errno));
    }
    text.append(buf, static_cast<size_t>(n));
  }
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ' || text.back() == '\t'))
    text.pop_back();
  return text;
}

}  // namespace

OptSpec token_file_option(const std::string& help) {
  return {"token-file", OptKind::Str, "",
          help + "; the file must be owned by you with mode 0600 or stricter. Alternatively "
                 "set ROOFTOP_TOKEN in the environment (used when no --token-file is given)",
          ""};
}

void retire_token_option(Options& o) {
  o.retire("token",
           "--token is no longer accepted: a token on the command line is visible to every user "
           "(ps). Put it in a file only you can read (chmod 600 FILE) and give --token-file FILE, "
           "or set ROOFTOP_TOKEN in the environment");
}

std::string read_private_line(const std::string& path, const std::string& what) {
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) close(fd);
    }
  } f{open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) throw UsageError(what + " " + path + ": " + std::strerror(errno));
  check_private(f.fd, path, what);
  std::string line = first_line(f.fd);
  if (line.empty()) throw UsageError(what + " " + path + " is empty (the token is its first line)");
  return line;
}

std::string load_token(Options& o, size_t max_len) {
  std::string token;
  const std::string& file = o.str("token-file");
  if (!file.empty()) {
    token = read_private_line(file, "--token-file");
  } else if (const char* env = std::getenv(kTokenEnv)) {
    token = env;
  }
  if (token.size() > max_len)
    throw UsageError("the token is longer than " + std::to_string(max_len) + " bytes");
  o.record("token", token.empty() ? "<unset>" : "<set>");
  return token;
}

}  // namespace rooftop
