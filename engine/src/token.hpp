// The shutdown token, a secret: read from a private file (--token-file,
// owned by this user, no access for group or others) or from the
// environment (ROOFTOP_TOKEN), never from the command line, where every
// user of the machine sees it (ps, /proc/PID/cmdline). Never printed:
// documents record only whether one is set.
#pragma once
#include <string>

#include "options.hpp"

namespace rooftop {

constexpr const char* kTokenEnv = "ROOFTOP_TOKEN";

// --token-file, with the given help text.
OptSpec token_file_option(const std::string& help);

// Refuses the old --token VALUE with a message naming the two ways (scripts
// written for it fail clearly instead of running without a token).
void retire_token_option(Options& o);

// The token from --token-file if given, else $ROOFTOP_TOKEN, else "".
// Throws UsageError if the file is missing, not a regular file, not owned by
// this user, readable or writable by group or others, empty, or the token is
// longer than max_len. Records config.token = "<set>" / "<unset>".
std::string load_token(Options& o, size_t max_len);

// The first line of a private file (checks as above; "what" names it).
std::string read_private_line(const std::string& path, const std::string& what);

}  // namespace rooftop
