// One entry of the engine's operation table (ops/table.hpp): what
// `rooftop-engine load --op NAME` runs and how the server answers it.
//
// Modelled on IOR's backends (src/aiori.h: one struct of hooks per backend,
// listed in available_aiori[]) and fio's ioengine_ops (name, flags, hooks,
// the engine's own options): the load driver (load.cpp) and the server
// (server.cpp) call these hooks and test these flags, and never name an
// operation. Each operation is one file (ops/noop.cpp, ops/read.cpp,
// ops/write.cpp); what the bulk ones share is in ops/bulk.cpp.
// docs/extending.md says how to add an operation or an option of one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "options.hpp"
#include "sysinfo.hpp"
#include "wire.hpp"

namespace rooftop {
enum class Counter : size_t;  // counters.hpp
namespace storage {
class Store;  // storage.hpp
struct Outcome;
}  // namespace storage
}  // namespace rooftop

namespace rooftop::ops {

struct Op;

// Capability flags: what the driver and the server may rely on.
enum Capability : unsigned {
  // Moves Workload::bytes per operation by RMA between the client's
  // registered data buffer and a server bulk slot (result op_bytes, bytes).
  kMovesBulk = 1u << 0,
  // --verify checks a data pattern end to end (result verify.checked).
  kVerifiable = 1u << 1,
  // Acts on the server's storage (serve --storage-dir) through its io
  // hook, on the server's I/O thread; `rooftop-engine storage` runs the
  // same hook in-process, without the network.
  kStorage = 1u << 2,
};

// Where an operation's option is listed in `load --help` and in the
// document's config section: right after --op (what one operation moves),
// or with the client's data options (after --slices, before --verify).
enum class Place { AfterOp, WithData };

struct OpOption {
  // "{ops}" in the help becomes the operations taking it ("read/write").
  OptSpec spec;
  Place place;
};

// What every operation of one load run does, from the options: the driver
// fills req_size, resp_size and verify; the operation's configure hook the
// rest (before the driver's fields are set: its hooks read them later).
struct Workload {
  uint64_t bytes = 0;      // bulk bytes per operation (0: none): result op_bytes
  bool verify = false;     // --verify
  bool stream = false;     // walk the data buffer (else one part per outstanding op)
  uint64_t data_len = 0;   // client data buffer to register (0: none)
  Pages pages = Pages::Base;  // --buffer-pages: what the data buffer is made of
  size_t req_size = 0;     // --req-size: requests padded to this many bytes
  uint32_t resp_size = 0;  // --resp-size: responses padded to this many bytes
  // The largest response the operation expects, if larger than --resp-size
  // (the client's receive buffers are at least this large).
  size_t max_response = 0;
  // The operation's own parsed option values, for its hooks (each operation
  // file names its indices): options are parsed once, in configure, never
  // on the per-operation path.
  uint64_t args[4] = {};
};

// What a server told the client in the handshake.
struct ServerLimits {
  int rank = 0;
  uint64_t max_bulk = 0;  // its --max-size
  uint32_t max_msg = 0;   // its --max-msg: largest request or response
};

// One operation in flight, as the client hooks see it.
struct ClientOp {
  uint64_t req_id = 0, conn = 0;
  uint8_t* data = nullptr;               // its part of the data buffer (bulk)
  uint64_t data_addr = 0, data_key = 0;  // the same, as the server addresses it
};

struct ClientHooks {
  // Reads and checks the operation's options (throws UsageError) into w;
  // `concurrency` operations are outstanding at once.
  void (*configure)(const Options& o, int64_t concurrency, Workload& w);
  // A server's limits and the provider's largest transfer allow this
  // workload, or a UsageError says which option is too large. May be null
  // (nothing to check).
  void (*check_server)(const Options& o, const Workload& w, const ServerLimits& server);
  void (*check_provider)(const Options& o, const Workload& w, uint64_t max_transfer);
  // Once per operation, before its latency starts (e.g. fill the data
  // pattern to send). May be null.
  void (*prepare)(const Workload& w, ClientOp& op);
  // Encodes the request into buf (capacity cap): its length, 0 if too small.
  // Called again when the provider asked to retry the send.
  size_t (*encode)(const Workload& w, const ClientOp& op, uint8_t* buf, size_t cap);
  // The operation's status given its response (e.g. a bulk response must
  // report the bytes asked for). Null: the response's status.
  wire::Status (*response)(const Workload& w, const wire::Message& m);
  // Verifiable operations, with --verify, once they succeeded: "" if the data
  // checks out, else what differs (reported once as an error).
  std::string (*verify)(const Workload& w, const ClientOp& op);
};

// A request of an operation, as the server's handler sees it. Its receive
// buffer is posted again once the handler returns: the message's string
// views must not be kept beyond the call.
struct Request {
  const Op& op;
  const wire::Message& m;
  uint64_t peer;      // the client's fi_addr_t
  size_t resp_total;  // response size asked for (--resp-size), at most --max-msg
};

// A bulk transfer the server runs in one of its RMA slots (and, for a
// storage operation, the job of its io hook: size 0 without bulk data).
struct RmaJob {
  const Op* op;
  uint64_t req_id, conn, size, raddr, rkey, peer;
  bool verify;
  uint32_t resp_len;
  bool random = false;  // put/get: a random offset (request flag kFlagRandom)
};

// Non-owning reference to an encoder callable, size_t(uint8_t* buf, size_t
// cap), valid while the callable lives (a lambda passed to a call: during
// that call). Unlike std::function it never allocates.
class EncodeRef {
 public:
  template <typename F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, EncodeRef>)
  EncodeRef(F&& f)  // NOLINT: implicit by design, like std::function_ref
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, uint8_t* b, size_t c) -> size_t {
          return (*static_cast<std::remove_reference_t<F>*>(o))(b, c);
        }) {}
  size_t operator()(uint8_t* b, size_t c) const { return call_(obj_, b, c); }

 private:
  void* obj_;
  size_t (*call_)(void*, uint8_t*, size_t);
};

// What the server offers operation handlers.
class ServerContext {
 public:
  virtual ~ServerContext() = default;
  // Sends a response encoded by `encode(buf, cap)` to peer (now, or queued).
  virtual void respond(uint64_t peer, EncodeRef encode) = 0;
  // The operation was served: its counter (result.requests) and bytes moved.
  virtual void served(const Op& op, uint64_t bytes) = 0;
  virtual void count(Counter c) = 0;  // one of the server's own counters
  virtual uint64_t max_bulk() const = 0;  // --max-size
  virtual size_t max_msg() const = 0;     // --max-msg: the largest response
  // Runs a bulk transfer in an RMA slot (now, or when one is free); the
  // server answers it when done.
  virtual void queue_rma(const RmaJob& job) = 0;
  // The server's storage, or nullptr (no --storage-dir).
  virtual storage::Store* store() = 0;
  // Runs a storage operation's io hook without bulk data (metadata) on the
  // I/O thread, then answers with its status and count.
  virtual void queue_io(const RmaJob& job) = 0;
  // A storage operation refused: counted (storage_failed), `why` reported
  // once, and answered storage_error.
  virtual void refuse_storage(const Request& r, const std::string& why) = 0;
};

// When a storage operation's io hook runs: on its own (metadata), before
// the RMA (get: read the file into the slot) or after it (put: write the
// slot to the file).
enum class IoWhen { None, Alone, BeforeRma, AfterRma };

// The RMA a bulk operation's server performs on the client's buffer.
enum class Rma { None, Write, Read };
const char* rma_name(Rma r);  // "write", "read"

struct ServerHooks {
  // Answers a request (or queues a transfer with ctx.queue_rma).
  void (*serve)(ServerContext& ctx, const Request& r);
  Rma rma;  // bulk operations: what the server does with the client's buffer
  // Before the RMA starts, on the slot's buffer (e.g. fill the pattern to
  // send). May be null.
  void (*before_rma)(const RmaJob& job, uint8_t* buf);
  // After the RMA completed without error: the status to answer (e.g. the
  // pattern received does not check out). Null: Ok.
  wire::Status (*after_rma)(const RmaJob& job, const uint8_t* buf);
  // Storage operations (kStorage): the storage call, with the slot's buffer
  // (null without bulk data). Runs on the server's I/O thread (or inline
  // with --io-threads 0), and in-process in `rooftop-engine storage`.
  IoWhen io_when;
  storage::Outcome (*io)(storage::Store& st, const RmaJob& job, uint8_t* buf);
  // The same call submitted without waiting (the server's inline mode, if
  // st.async()): Outcome.pending, completed later under `tag`. Null: the
  // operation has no asynchronous form and io runs inline.
  storage::Outcome (*io_async)(storage::Store& st, const RmaJob& job, uint8_t* buf, uint64_t tag) = nullptr;
};

struct Op {
  const char* name;     // --op NAME
  const char* help;     // its part of --op's help
  const char* counter;  // its key in the server's result.requests
  wire::Type wire_type;  // the request it sends
  wire::BulkOp bulk_op;  // for wire::Type::Bulk: the request's direction byte
  wire::MetaOp meta_op;  // for wire::Type::Meta: the request's op byte
  unsigned caps;         // Capability flags
  std::vector<OpOption> (*options)();  // its own options (null: none)
  ClientHooks client;
  ServerHooks server;

  bool has(Capability c) const { return (caps & c) != 0; }
};

}  // namespace rooftop::ops
