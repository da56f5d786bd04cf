#include "store/blob_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/sha256.h"
#include "common/unique_fd.h"
#include "common/unique_name.h"

namespace gpuwasm::store {
namespace fs = std::filesystem;

namespace {

bool IsSha256(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status Errno(const std::string& what) { return Status::IoError(what + ": " + std::strerror(errno)); }

Status SyncDir(const fs::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Errno("cannot open " + dir.string());
  int rc = ::fsync(fd.get());
  return rc == 0 ? Status::Ok() : Errno("cannot sync " + dir.string());
}

}  // namespace

Result<BlobStore> BlobStore::Open(const fs::path& root) {
  std::error_code ec;
  for (const char* sub : {"blobs", "tmp"}) {
    fs::create_directories(root / sub, ec);
    if (ec) return Status::IoError("cannot create " + (root / sub).string() + ": " + ec.message());
  }
  return BlobStore(root);
}

Result<fs::path> BlobStore::PathOf(std::string_view sha256) const {
  if (!IsSha256(sha256)) return Status::InvalidArgument("'" + std::string(sha256) + "' is not a sha256 hex digest");
  return root_ / "blobs" / std::string(sha256);
}

Result<std::string> BlobStore::Put(std::span<const uint8_t> bytes) {
  std::string sha = Sha256Hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  GPUWASM_RETURN_IF_ERROR(Put(bytes, sha));
  return sha;
}

Status BlobStore::Put(std::span<const uint8_t> bytes, const std::string& sha) {
  GPUWASM_ASSIGN_OR_RETURN(fs::path final_path, PathOf(sha));
  if (auto size = Size(sha); size.ok() && *size == bytes.size()) return Status::Ok();  // same bytes: same name
  fs::path tmp = root_ / "tmp" / (sha + "." + UniqueSuffix());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return Errno("cannot create " + tmp.string());
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd.get(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Errno("cannot write " + tmp.string());
      fd.Reset();
      ::unlink(tmp.c_str());
      return s;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || fd.Close() != 0) {
    Status s = Errno("cannot flush " + tmp.string());
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    Status s = Errno("cannot rename " + tmp.string() + " to " + final_path.string());
    ::unlink(tmp.c_str());
    return s;
  }
  return SyncDir(root_ / "blobs");
}

Result<std::string> BlobStore::Get(std::string_view sha256) const {
  GPUWASM_ASSIGN_OR_RETURN(fs::path path, PathOf(sha256));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("blob " + std::string(sha256) + " is not in the store");
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  if (in.bad()) return Status::IoError("cannot read " + path.string());
  if (Sha256Hex(bytes) != sha256) {
    return Status::IoError("blob " + std::string(sha256) + " is damaged: its content no longer matches its hash");
  }
  return bytes;
}

bool BlobStore::Has(std::string_view sha256) const { return Size(sha256).ok(); }

Result<uint64_t> BlobStore::Size(std::string_view sha256) const {
  GPUWASM_ASSIGN_OR_RETURN(fs::path path, PathOf(sha256));
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) return Status::NotFound("blob " + std::string(sha256) + " is not in the store");
  return size;
}

Status BlobStore::Remove(std::string_view sha256) {
  GPUWASM_ASSIGN_OR_RETURN(fs::path path, PathOf(sha256));
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("cannot remove " + path.string());
  return Status::Ok();
}

Result<std::vector<std::string>> BlobStore::List() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_ / "blobs", ec)) {
    std::string name = e.path().filename().string();
    if (IsSha256(name)) out.push_back(std::move(name));
  }
  if (ec) return Status::IoError("cannot list " + (root_ / "blobs").string() + ": " + ec.message());
  return out;
}

Result<size_t> BlobStore::CleanTemporary(std::chrono::seconds older_than) {
  size_t removed = 0;
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (const auto& e : fs::directory_iterator(root_ / "tmp", ec)) {
    std::error_code rm;
    if (older_than.count() > 0) {
      auto written = fs::last_write_time(e.path(), rm);
      if (rm || now - written < older_than) continue;  // maybe still being written
    }
    if (fs::remove(e.path(), rm)) ++removed;
  }
  if (ec) return Status::IoError("cannot list " + (root_ / "tmp").string() + ": " + ec.message());
  return removed;
}

}  // namespace gpuwasm::store
