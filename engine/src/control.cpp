// Small client commands: ping (is a server up?), stat (its counters),
// shutdown (token-protected), providers (what libfabric offers here),
// domains (the domains and interfaces a provider can use here).
#include <cstdio>
#include <algorithm>
#include <fstream>

#include "client_core.hpp"
#include "commands.hpp"
#include "common_options.hpp"
#include "report.hpp"
#include "token.hpp"

namespace rooftop {

namespace {

std::vector<OptSpec> target_options(std::vector<OptSpec> extra) {
  auto o = opt::client_common();
  o.push_back(opt::rank("server rank to talk to"));
  o.insert(o.end(), extra.begin(), extra.end());
  o.push_back(opt::cpus());
  o.push_back(opt::output());
  return o;
}

// Resolves and connects to the one server a control command names.
struct Connection {
  std::unique_ptr<ClientCore> core;
  Target target;
  Connection(const Options& o, Report& rep) {
    const std::string dir = o.str("group-dir");
    if (dir.empty()) throw UsageError("--group-dir is required");
    int r = static_cast<int>(o.integer("rank"));
    if (r < 0) throw UsageError("--rank must be >= 0");
    auto addrs = resolve_servers(dir, {r}, o.str("fabric"), o.seconds("timeout"));
    core = std::make_unique<ClientCore>(o, addrs[0], 4, 4096);
    rep.capture(core->ep());
    target = core->connect(addrs[0], 0);
  }
};

}  // namespace

int cmd_ping(int argc, char** argv) {
  Options o("ping",
            "Check that server <rank> of a group answers: handshake plus --count\n"
            "noop round trips. Exit 0 if it does, 3 if it is missing or silent.",
            target_options({{"count", OptKind::Int, "3", "noop round trips after the handshake", ""},
                            {"send-malformed", OptKind::Int, "0",
                             "robustness probe: first send N malformed messages (truncated, bad magic/version/type/length, unknown connection) the server must drop", ""}}));
  return run_command(o, "ping", argc, argv, [&](Report& rep) {
    int64_t count = o.integer("count");
    if (count < 0 || count > 1000000) throw UsageError("--count must be 0..1000000");
    int64_t t = now_ns();
    Connection c(o, rep);
    double connect_us = (now_ns() - t) / 1e3;  // resolve + open endpoint + handshake
    int64_t nbad = o.integer("send-malformed");
    if (nbad < 0 || nbad > 100000) throw UsageError("--send-malformed must be 0..100000");
    for (int64_t i = 0; i < nbad; i++) {
      uint8_t b[256];
      size_t len = wire::encode_noop_req(b, sizeof b, 1, c.target.conn, 64, 0);
      switch (i % 6) {
        case 0: len = 10; break;                                  // truncated header
        case 1: b[0] ^= 0xff; break;                              // bad magic
        case 2: b[4] = 99; break;                                 // bad version
        case 3: b[6] = 0x7f; break;                               // bad type
        case 4: b[8] = 200; break;                                // body longer than total
        case 5: for (int k = 32; k < 40; k++) b[k] = 0xee; break; // unknown connection
      }
      c.core->send_raw(c.target, b, len);
    }
    double best = 0, sum = 0;
    for (int64_t i = 0; i < count; i++) {
      int64_t s = now_ns();
      c.core->call(c.target, "ping", [&](uint8_t* b, size_t cap, uint64_t req) {
        return wire::encode_noop_req(b, cap, req, c.target.conn, 0, 0);
      });
      double us = (now_ns() - s) / 1e3;
      best = i == 0 ? us : std::min(best, us);
      sum += us;
    }
    JsonWriter w;
    w.begin_object().kv("rank", c.target.addr.rank).kv("address", c.target.addr.text);
    w.kv("host", c.target.addr.host).kv("connect_us", connect_us).kv("count", count);
    w.kv("malformed_sent", nbad).kv("rtt_min_us", best).kv("rtt_mean_us", count ? sum / count : 0.0).end_object();
    rep.result_json = w.str();
    rep.complete = true;
    return kExitOk;
  });
}

int cmd_stat(int argc, char** argv) {
  Options o("stat", "Ask server <rank> for its counters: ops served, bytes, CPU time.",
            target_options({}));
  return run_command(o, "stat", argc, argv, [&](Report& rep) {
    Connection c(o, rep);
    wire::Message m = c.core->call(c.target, "stat", [&](uint8_t* b, size_t cap, uint64_t req) {
      return wire::encode_stat_req(b, cap, req, c.target.conn);
    });
    const wire::StatBody& s = m.stat;
    JsonWriter w;
    w.begin_object().kv("rank", c.target.addr.rank);
#define ROOFTOP_X(field, key) w.kv(key, s.field);
    ROOFTOP_STAT_COUNTS(ROOFTOP_X)
#undef ROOFTOP_X
    w.kv("elapsed_s", s.wall_s);
    w.key("cpu").begin_object().kv("user_s", s.user_s).kv("sys_s", s.sys_s);
    w.kv("utilization", s.wall_s > 0 ? (s.user_s + s.sys_s) / s.wall_s : 0.0).end_object();
    w.end_object();
    rep.result_json = w.str();
    rep.complete = true;
    return kExitOk;
  });
}

int cmd_shutdown(int argc, char** argv) {
  Options o("shutdown",
            "Ask server <rank> to shut down. It accepts only the token it was\n"
            "started with (from --token-file or ROOFTOP_TOKEN); exit 1 if refused.\n"
            "The token is never printed.",
            target_options({token_file_option("read the server's shutdown token from this file's first line")}));
  retire_token_option(o);
  return run_command(o, "shutdown", argc, argv, [&](Report& rep) {
    std::string token = load_token(o, wire::kMaxTokenLen);
    if (token.empty())
      throw UsageError(std::string("no token: give --token-file FILE (mode 0600) or set ") + kTokenEnv);
    Connection c(o, rep);
    wire::Message m = c.core->call(c.target, "shutdown", [&](uint8_t* b, size_t cap, uint64_t req) {
      return wire::encode_shutdown_req(b, cap, req, c.target.conn, token);
    });
    JsonWriter w;
    w.begin_object().kv("rank", c.target.addr.rank).kv("status", wire::status_name(m.status)).end_object();
    rep.result_json = w.str();
    rep.complete = m.status == wire::Status::Ok;
    if (!rep.complete) {
      rep.errors.push_back("server rank " + std::to_string(c.target.addr.rank) + " refused: wrong token");
      return kExitFailure;
    }
    return kExitOk;
  });
}

int cmd_providers(int argc, char** argv) {
  Options o("providers", "List the libfabric providers available on this machine (JSON).",
            {opt::cpus_unused(), opt::output()});
  return run_command(o, "providers", argc, argv, [&](Report& rep) {
    JsonWriter w;
    w.begin_object().kv("libfabric_version", Endpoint::libfabric_version());
    w.key("providers").begin_array();
    for (auto& p : available_providers()) w.value(p);
    w.end_array().end_object();
    rep.result_json = w.str();
    rep.complete = true;
    return kExitOk;
  });
}

namespace {
void write_inventory(JsonWriter& w, const NicInventory& inv) {
  w.begin_object().kv("provider", inv.provider).kv("ip_provider", inv.ip_provider);
  w.key("domains").begin_array();
  for (auto& d : inv.domains) w.value(d);
  w.end_array();
  w.key("interfaces").begin_array();
  for (auto& i : inv.interfaces) {
    w.begin_object().kv("name", i.name).key("ips").begin_array();
    for (auto& ip : i.ips) w.value(ip);
    w.end_array();
    bool carries = std::find(inv.domains.begin(), inv.domains.end(), i.name) != inv.domains.end();
    if (inv.device_of && !carries) {
      std::string dev = inv.device_of(i.name);
      carries = !dev.empty() && std::find(inv.domains.begin(), inv.domains.end(), dev) != inv.domains.end();
    }
    w.kv("carries_provider", inv.ip_provider && carries).end_object();
  }
  w.end_array().end_object();
}
}  // namespace

int cmd_domains(int argc, char** argv) {
  Options o("domains",
            "List the domains provider --fabric offers here and, for IP providers\n"
            "(tcp, sockets, udp, verbs), the network interfaces with their addresses.\n"
            "With --domain and/or --address, first check that they exist here and\n"
            "carry the provider: exit 2 with the list if not (what serve and load do).",
            {opt::fabric(), opt::domain("check this domain / network interface"),
             opt::address("check that a local interface carries this IP address"), opt::cpus_unused(),
             opt::output()});
  return run_command(o, "domains", argc, argv, [&](Report& rep) {
    FabricSpec f = parse_fabric_spec(o.str("fabric"));
    JsonWriter w;
    write_inventory(w, nic_inventory(f));
    rep.result_json = w.str();
    rep.complete = true;
    return kExitOk;
  });
}

}  // namespace rooftop
