#include "cm_nudge.hpp"

#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>

#include "json.hpp"

namespace rooftop {

std::vector<int> listening_sockets() {
  std::vector<int> out;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return out;
  const int own = dirfd(d);
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end || fd == own) continue;
    int accepting = 0, type = 0;
    socklen_t len = sizeof accepting, tlen = sizeof type;
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) == 0 && accepting &&
        getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 && type == SOCK_STREAM)
      out.push_back(static_cast<int>(fd));
  }
  closedir(d);
  return out;
}

bool connections_waiting(const std::vector<int>& fds) {
  std::vector<pollfd> p;
  for (int fd : fds) p.push_back({fd, POLLIN, 0});
  return !p.empty() && ::poll(p.data(), p.size(), 0) > 0;
}

void CmNudge::start(Endpoint& ep, std::string self, bool on) {
  ep_ = &ep;
  self_raw_ = std::move(self);
  if (on) listeners_ = listening_sockets();
}

void CmNudge::check(int64_t now) {
  if (listeners_.empty() || now < next_) return;
  next_ = now + kCheckNs;
  const bool waiting = connections_waiting(listeners_);
  const bool still = waiting && waiting_;  // queued at two looks: not being accepted
  waiting_ = waiting;
  if (state_ == State::Connecting) {
    if (now - since_ > kGiveUpNs) return fail("no connection to this server's own address");
    return post();
  }
  if (!still || state_ != State::Idle) return;
  try {
    if (self_ != FI_ADDR_NOTAVAIL) ep_->remove(self_);  // the last nudge's connection: connect afresh
    self_ = FI_ADDR_NOTAVAIL;
    self_ = ep_->insert(self_raw_);
  } catch (const EngineError& e) {
    return fail(e.what());
  }
  since_ = now;
  post();
}

void CmNudge::post() {
  ssize_t rc = ep_->post_send(nullptr, 0, nullptr, self_, &ctx_);
  if (rc == 0) {
    state_ = State::Sent;
    sent_++;
  } else if (rc == -FI_EAGAIN) {
    state_ = State::Connecting;  // rxm connects meanwhile, accepting what is queued
  } else {
    fail("fi_send: " + fi_error_text(static_cast<int>(rc)));
  }
}

void CmNudge::fail(const std::string& why) {
  errors_++;
  last_error_ = why;
  state_ = State::Idle;
  if (self_ != FI_ADDR_NOTAVAIL) ep_->remove(self_);
  self_ = FI_ADDR_NOTAVAIL;
}

void CmNudge::sent(const CqEvent& ev) {
  state_ = State::Idle;
  if (ev.err) {
    errors_++;
    last_error_ = ev.err_text;
  }
}

void CmNudge::write(JsonWriter& w) const {
  w.key("connection_nudges").begin_object();
  w.kv("sent", sent_).kv("received", received_).kv("errors", errors_);
  if (last_error_.empty()) w.key("last_error").null();
  else w.kv("last_error", last_error_);
  w.end_object();
}

}  // namespace rooftop
