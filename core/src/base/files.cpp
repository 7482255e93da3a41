#include "base/files.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gt {
namespace fs = std::filesystem;

namespace {

using Identity = std::pair<dev_t, ino_t>;

std::optional<Identity> identity(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return Identity{st.st_dev, st.st_ino};
}

std::string kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return S_ISREG(m) ? "" : "not a regular file";
}

// The path as the system will find it: absolute, with the links of its existing part resolved.
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p, ec).lexically_normal() : r;
}

// The files a role stands for: a store brings its -wal, -shm and -journal files, a folder the
// files written in it.
std::vector<std::pair<fs::path, std::string>> files_of(const FileRole& r) {
  std::vector<std::pair<fs::path, std::string>> out = {{r.path, ""}};
  if (r.use == FileUse::store || r.use == FileUse::store_readonly)
    for (const char* ext : {"-wal", "-shm", "-journal"}) out.push_back({fs::path(r.path.string() + ext), ext});
  if (r.use == FileUse::write_folder) {
    out.clear();
    for (auto& f : r.files) out.push_back({r.path / f, "/" + f});
  }
  return out;
}

bool writes(const FileRole& r) {
  return r.use == FileUse::write || r.use == FileUse::write_folder || r.use == FileUse::store;
}

std::string role_text(const FileRole& r) {
  switch (r.use) {
    case FileUse::read: return fmt::format("the file {} reads", r.flag);
    case FileUse::write:
    case FileUse::write_folder: return fmt::format("the file {} writes", r.flag);
    case FileUse::store:
    case FileUse::store_readonly: return fmt::format("the results store ({})", r.flag);
  }
  return r.flag;
}

// The first of `a`'s files that is one of `b`'s, as (a's file, b's file), by identity or name.
std::optional<std::pair<std::pair<fs::path, std::string>, std::pair<fs::path, std::string>>> shared(const FileRole& a,
                                                                                                     const FileRole& b) {
  for (auto& fa : files_of(a))
    for (auto& fb : files_of(b)) {
      auto ia = identity(fa.first), ib = identity(fb.first);
      if ((ia && ib && *ia == *ib) || resolved(fa.first) == resolved(fb.first)) return std::pair{fa, fb};
    }
  return std::nullopt;
}

// Creates and removes a file in `dir`: the one test of "can this folder be written" that
// agrees with the system (a read-only mount, an ACL, a root-owned folder, /proc).
void probe_folder(const fs::path& dir, const FileRole& r) {
  static std::atomic<unsigned> n{0};
  const fs::path probe = dir / fmt::format(".gemmtune-probe-{}-{}", ::getpid(), n++);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw InputError(fmt::format("{}: {}: the folder {} cannot be written ({})", r.flag, r.path.string(), dir.string(),
                                 std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

// The nearest folder that exists on the way to `p` (where a missing folder would be created).
fs::path existing_folder_of(const fs::path& p, const FileRole& r) {
  fs::path dir = fs::absolute(p).parent_path();
  while (!dir.empty() && ::access(dir.c_str(), F_OK) != 0 && dir != dir.root_path()) dir = dir.parent_path();
  if (std::string kind = special_file_kind(dir); !kind.empty() && kind != "a directory")
    throw InputError(fmt::format("{}: {}: {} is {}, not a folder", r.flag, r.path.string(), dir.string(), kind));
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw InputError(fmt::format("{}: {}: {} is a file, not a folder", r.flag, r.path.string(), dir.string()));
  return dir;
}

// An existing store (and its -wal and -shm files) this process may not write: SQLite would open
// it read-only without a word and fail at the first row, after all the work.
void check_store_writable(const FileRole& r) {
  for (auto& [file, ext] : files_of(r))
    if (::access(file.c_str(), F_OK) == 0 && ::access(file.c_str(), W_OK) != 0)
      throw RuntimeFailure(fmt::format("{}: {}: the results store{} cannot be written ({}); commands that only read "
                                       "it (export, lookup, report, compare --no-tune) still can",
                                       r.flag, file.string(), ext.empty() ? "" : "'s " + ext + " file",
                                       std::strerror(errno)));
}

void check_writable(const FileRole& r) {
  if (r.use == FileUse::write_folder) {
    const std::string kind = special_file_kind(r.path);
    struct stat st {};
    const bool exists = ::stat(r.path.c_str(), &st) == 0;
    if (exists && !S_ISDIR(st.st_mode))
      throw InputError(fmt::format("{}: {} is {}, not a folder", r.flag, r.path.string(),
                                   kind.empty() ? "a file" : kind));
    if (!exists && !kind.empty()) throw InputError(fmt::format("{}: {} is {}", r.flag, r.path.string(), kind));
    for (auto& [file, name] : files_of(r))
      if (std::string k = special_file_kind(file); !k.empty())
        throw InputError(fmt::format("{}: {} is {}, not a file it can replace", r.flag, file.string(), k));
    probe_folder(exists ? r.path : existing_folder_of(r.path / "x", r), r);
    return;
  }
  if (std::string kind = special_file_kind(r.path); !kind.empty())
    throw InputError(fmt::format("{}: {} is {}, not a file {}", r.flag, r.path.string(), kind,
                                 r.use == FileUse::store ? "that can hold a results store" : "it can write"));
  if (r.use == FileUse::store) check_store_writable(r);
  probe_folder(existing_folder_of(resolved(r.path), r), r);
}

}  // namespace

void require_writable_folder(const fs::path& dir, const std::string& flag) {
  if (std::string kind = special_file_kind(dir); !kind.empty() && kind != "a directory")
    throw RuntimeFailure(fmt::format("{}: {} is {}, not a folder", flag, dir.string(), kind));
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw RuntimeFailure(fmt::format("{}: {} is a file, not a folder", flag, dir.string()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RuntimeFailure(fmt::format("{}: cannot create the folder {}: {}", flag, dir.string(), ec.message()));
  try {
    probe_folder(dir, FileRole{FileUse::write_folder, flag, dir});
  } catch (const InputError& e) {
    throw RuntimeFailure(e.what());
  }
}

std::string special_file_kind(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) return kind_of(st.st_mode);
  if (errno == ELOOP) return "a loop of symbolic links";
  if (errno == ENAMETOOLONG) return "a name too long for the system";
  if (errno == ENOTDIR) return "a path through a file";
  return "";
}

void check_file_roles(const std::vector<FileRole>& roles) {
  for (auto& r : roles)
    if (r.path.empty()) throw InputError(fmt::format("{}: the file name is empty", r.flag));
  for (auto& r : roles) {
    if (writes(r)) {
      check_writable(r);
    } else if (std::string kind = special_file_kind(r.path); !kind.empty()) {
      // A FIFO would block the reader for ever, a device feed it without end.
      throw InputError(fmt::format("{}: {} is {}, not a file it can read", r.flag, r.path.string(), kind));
    }
  }
  // Each writer against every other role; an output (-o, --record) is named first, as the one
  // to change.
  for (bool outputs : {true, false})
    for (size_t i = 0; i < roles.size(); ++i) {
      const FileRole& a = roles[i];
      if (!writes(a) || (a.use == FileUse::store) == outputs) continue;
      for (size_t j = 0; j < roles.size(); ++j) {
        if (i == j) continue;
        auto both = shared(a, roles[j]);
        if (!both) continue;
        const FileRole& b = roles[j];
        const bool same_name = resolved(both->first.first) == resolved(both->second.first);
        throw InputError(fmt::format(
            "{}: {} is {}{}{}; a command never writes over what it reads or writes otherwise: name another file",
            a.flag, both->first.first.string(), role_text(b),
            both->second.second.empty() ? "" : fmt::format(" ({} file)", both->second.second),
            same_name ? "" : fmt::format(", {} by another name (a link)", both->second.first.string())));
      }
    }
}

void check_input_file(const fs::path& p, const std::string& what, uintmax_t max_bytes) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) {
    if (std::string kind = special_file_kind(p); !kind.empty())
      throw InputError(fmt::format("{}: is {}, not a file", what, kind));
    return;  // missing: the reader says so
  }
  if (std::string kind = kind_of(st.st_mode); !kind.empty())
    throw InputError(fmt::format("{}: is {}, not a file", what, kind));
  if (uintmax_t(st.st_size) > max_bytes)
    throw InputError(fmt::format("{}: is {} bytes, more than the {} bytes an input may have", what, uintmax_t(st.st_size),
                                 max_bytes));
}

void write_file_replacing(const fs::path& file, std::string_view text) {
  // Through a link, the target is replaced and the link kept.
  std::error_code ec;
  fs::path target = file;
  for (int hops = 0; fs::is_symlink(target, ec); ++hops) {
    if (hops == 40) throw RuntimeFailure(fmt::format("{}: too many levels of symbolic links", file.string()));
    fs::path next = fs::read_symlink(target, ec);
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  static std::atomic<unsigned> n{0};
  const fs::path tmp = fmt::format("{}.tmp{}-{}", target.string(), ::getpid(), n++);
  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    throw RuntimeFailure(fmt::format("{}: {} ({}); the file is as it was", file.string(), what, std::strerror(err)));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create a temporary file beside it", errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : ENOSPC;
      ::close(fd);
      fail("writing failed", err);
    }
    done += size_t(w);
  }
  // On the disk before it replaces the old file: a power cut leaves one of the two whole.
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("writing failed", err);
  }
  if (::close(fd) != 0) fail("writing failed", errno);
  if (::rename(tmp.c_str(), target.c_str()) != 0) fail("cannot be replaced", errno);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // the rename itself, on the disk
    ::close(dfd);
  }
}

namespace {

// An open file descriptor under a flock, both released on scope exit.
class LockedFile {
 public:
  LockedFile(const fs::path& file, int flags, int lock) : file_(file) {
    fd_ = ::open(file.c_str(), flags | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot be opened");
    while (::flock(fd_, lock) != 0)
      if (errno != EINTR) fail("cannot be locked");
  }
  ~LockedFile() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;
  [[noreturn]] void fail(const char* what) const {
    throw RuntimeFailure(fmt::format("{}: {}: {}", file_.string(), what, std::strerror(errno)));
  }
  std::string read_all() const {
    std::string text;
    char buf[1 << 16];
    for (off_t at = 0;;) {
      ssize_t n = ::pread(fd_, buf, sizeof buf, at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot be read");
      if (n == 0) return text;
      text.append(buf, size_t(n));
      at += n;
    }
  }
  int fd() const { return fd_; }

 private:
  fs::path file_;
  int fd_ = -1;
};

}  // namespace

void append_locked(const fs::path& file, const std::function<std::string(const std::string&)>& more) {
  LockedFile f(file, O_RDWR | O_CREAT | O_APPEND, LOCK_EX);
  const std::string text = more(f.read_all());
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(f.fd(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) f.fail("cannot be written");
    done += size_t(n);
  }
  if (!text.empty() && ::fsync(f.fd()) != 0) f.fail("cannot be flushed to disk");
}

std::string read_locked(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return "";
  if (std::string kind = special_file_kind(file); !kind.empty())
    throw RuntimeFailure(fmt::format("{}: is {}, not a file", file.string(), kind));
  LockedFile f(file, O_RDONLY, LOCK_SH);
  return f.read_all();
}

}  // namespace gt
