// Unit tests of the storage layer (storage.hpp) on real files in a fresh
// directory of /tmp: verifiable blocks, offsets of each pattern and
// allocation, fsync counts, the metadata operations against the directory,
// and the knobs a file system refuses (O_DIRECT on tmpfs, when /dev/shm is
// one). tests/engine/test_storage.py runs the same through the engine on a
// loop-mounted ext4 image and tmpfs.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "storage.hpp"

using namespace rooftop;
using rooftop::storage::Store;

namespace {

constexpr long kTmpfsMagic = 0x01021994;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/rooftop-storage-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { rmdir(path.c_str()); }
};

storage::Config config(const std::string& dir, std::vector<std::string> more) {
  std::vector<std::string> args = {"--storage-dir", dir};
  args.insert(args.end(), more.begin(), more.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  Options o("serve", "test", storage::options(false));
  o.parse(static_cast<int>(argv.size()), argv.data());
  return storage::configure(o, 3);
}

size_t entries(const std::string& dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) n++;
    closedir(d);
  }
  return n;
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

TEST(StorageBlocks, RoundTripAndCatchDamage) {
  std::vector<uint8_t> b(3 * storage::kBlock);
  storage::fill_blocks(b.data(), b.size(), 77);
  EXPECT_EQ(storage::check_blocks(b.data(), b.size()), b.size());
  b[storage::kBlock + 100] ^= 1;
  EXPECT_EQ(storage::check_blocks(b.data(), b.size()), storage::kBlock + 100);
  std::vector<uint8_t> zeros(storage::kBlock);  // never written: no header
  EXPECT_EQ(storage::check_blocks(zeros.data(), zeros.size()), 0u);
}

TEST(StorageConfig, KnobsAreCheckedAndNamed) {
  TempDir d;
  EXPECT_THROW(config(d.path, {"--file-size", "5000"}), UsageError);
  EXPECT_THROW(config(d.path, {"--fill", "--allocation", "append"}), UsageError);
  EXPECT_THROW(config(d.path, {"--fsync-every", "-1"}), UsageError);
  storage::Config c = config(d.path, {"--io-mode", "direct+dsync"});
  EXPECT_EQ(c.open_flags, O_DIRECT | O_DSYNC);
  EXPECT_EQ(c.rank, 3);
  try {
    Store s(config(d.path + "/missing", {}));
    FAIL() << "a missing --storage-dir was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--storage-dir"), std::string::npos) << e.what();
  }
}

TEST(StorageStore, PutThenGetReadsBackTheBlocksAndWraps) {
  TempDir d;
  {
    Store s(config(d.path, {"--file-size", "16KiB", "--allocation", "wrap", "--fsync-every", "2"}));
    const std::string data = d.path + "/rooftop-data.3";
    std::vector<uint8_t> buf(8192), back(8192);
    // Nothing written yet: a get is refused, not answered with zeros.
    EXPECT_EQ(s.get(back.data(), back.size(), false).status, wire::Status::StorageError);
    for (uint64_t i = 0; i < 3; i++) {  // 3 x 8 KiB in a 16 KiB file: the third overwrites the first
      storage::fill_blocks(buf.data(), buf.size(), i + 1);
      ASSERT_EQ(s.put(buf.data(), buf.size(), false, true).status, wire::Status::Ok);
    }
    EXPECT_EQ(file_size(data), 16384u);
    ASSERT_EQ(s.get(back.data(), back.size(), false).status, wire::Status::Ok);
    EXPECT_EQ(std::memcmp(back.data(), buf.data(), buf.size()), 0) << "the third put wrapped to offset 0";
    ASSERT_EQ(s.get(back.data(), back.size(), true).status, wire::Status::Ok);
    EXPECT_EQ(storage::check_blocks(back.data(), back.size()), back.size());
    // A damaged put is refused before it is written.
    buf[5000] ^= 1;
    EXPECT_EQ(s.put(buf.data(), buf.size(), false, true).status, wire::Status::VerifyFailed);
    JsonWriter w;
    s.write_json(w);
    EXPECT_NE(w.str().find("\"puts\":3"), std::string::npos) << w.str();
    EXPECT_NE(w.str().find("\"fsyncs\":1"), std::string::npos) << w.str();
    EXPECT_NE(w.str().find("\"allocation\":\"wrap\""), std::string::npos) << w.str();
  }
  EXPECT_EQ(entries(d.path), 0u) << "the store removes its files at exit";
}

TEST(StorageStore, AppendGrowsToFileSizeThenStartsAgainAndRefusesRandomOffsets) {
  TempDir d;
  Store s(config(d.path, {"--file-size", "8KiB", "--allocation", "append"}));
  std::vector<uint8_t> buf(4096);
  const std::string data = d.path + "/rooftop-data.3";
  for (int i = 0; i < 2; i++) ASSERT_EQ(s.put(buf.data(), buf.size(), false, false).status, wire::Status::Ok);
  EXPECT_EQ(file_size(data), 2u * 4096) << "append grows the file";
  ASSERT_EQ(s.put(buf.data(), buf.size(), false, false).status, wire::Status::Ok);
  EXPECT_EQ(file_size(data), 4096u) << "past --file-size the file starts again empty (bounded disk use)";
  ASSERT_EQ(s.put(buf.data(), buf.size(), false, false).status, wire::Status::Ok);
  EXPECT_EQ(file_size(data), 2u * 4096);
  storage::Outcome o = s.put(buf.data(), buf.size(), true, false);
  EXPECT_EQ(o.status, wire::Status::BadRequest);
  EXPECT_NE(o.error.find("append"), std::string::npos) << o.error;
}

TEST(StorageStore, PreallocateSizesTheFileUpFront) {
  TempDir d;
  Store s(config(d.path, {"--file-size", "1MiB"}));
  const std::string data = d.path + "/rooftop-data.3";
  EXPECT_EQ(file_size(data), 1u << 20);
  struct stat st {};
  ASSERT_EQ(stat(data.c_str(), &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, 1u << 20) << "fallocate reserved the blocks";
}

TEST(StorageStore, MetadataOperationsMatchTheDirectory) {
  TempDir d;
  {
    Store s(config(d.path, {"--meta-files", "5", "--meta-layout", "per-process"}));
    const std::string meta = d.path + "/rooftop-meta.3";
    for (int i = 0; i < 3; i++) ASSERT_EQ(s.meta(wire::MetaOp::Create).status, wire::Status::Ok);
    EXPECT_EQ(entries(meta), 8u) << "5 populated + 3 created";
    storage::Outcome r = s.meta(wire::MetaOp::Readdir);
    ASSERT_EQ(r.status, wire::Status::Ok);
    EXPECT_EQ(r.count, 8u);
    EXPECT_EQ(s.meta(wire::MetaOp::Stat).status, wire::Status::Ok);
    EXPECT_EQ(s.meta(wire::MetaOp::Open).status, wire::Status::Ok);
    for (int i = 0; i < 8; i++) ASSERT_EQ(s.meta(wire::MetaOp::Unlink).status, wire::Status::Ok);
    EXPECT_EQ(entries(meta), 0u);
    ASSERT_EQ(s.meta(wire::MetaOp::Unlink).status, wire::Status::Ok);  // refills, then removes one
    EXPECT_EQ(entries(meta), 4u);
    JsonWriter w;
    s.write_json(w);
    EXPECT_NE(w.str().find("\"refills\":1"), std::string::npos) << w.str();
    EXPECT_NE(w.str().find("\"unlinked\":9"), std::string::npos) << w.str();
  }
  EXPECT_EQ(entries(d.path), 0u);
}

// A campaign's next server group in the same directory meets the files an
// earlier one kept (--keep-files): it passes over their names.
TEST(StorageStore, MetadataPassesOverFilesAnEarlierServerKept) {
  TempDir d;
  const std::string meta = d.path + "/rooftop-meta";
  for (int round = 1; round <= 2; round++) {
    Store s(config(d.path, {"--meta-files", "5", "--keep-files", "--allocation", "wrap", "--file-size", "4KiB"}));
    for (int i = 0; i < 2; i++) ASSERT_EQ(s.meta(wire::MetaOp::Create).status, wire::Status::Ok) << round;
    EXPECT_EQ(entries(meta), 7u * round);
    JsonWriter w;
    s.write_json(w);
    EXPECT_NE(w.str().find("\"errors\":0"), std::string::npos) << w.str();
  }
  ::unlink((d.path + "/rooftop-data.3").c_str());
  for (int i = 0; i < 14; i++) ::unlink((meta + "/r3." + std::to_string(i)).c_str());
  ::rmdir(meta.c_str());
  EXPECT_EQ(entries(d.path), 0u);
}

TEST(StorageStore, TmpfsRefusesODirectNamingTheKnobAndFileSystem) {
  struct statfs sf {};
  if (statfs("/dev/shm", &sf) != 0 || sf.f_type != kTmpfsMagic) GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  char tmpl[] = "/dev/shm/rooftop-storage-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  try {
    Store s(config(dir, {"--io-mode", "direct"}));
    ADD_FAILURE() << "O_DIRECT on tmpfs was accepted";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--io-mode direct"), std::string::npos) << m;
    EXPECT_NE(m.find("tmpfs"), std::string::npos) << m;
  }
  {
    Store s(config(dir, {"--file-size", "64KiB"}));  // buffered: fine, and says O_DIRECT would not be honoured
    EXPECT_FALSE(s.direct_honoured());
    EXPECT_EQ(storage::describe_fs(dir).fs_type, "tmpfs");
  }
  rmdir(dir.c_str());
}
