// The files a command reads and writes. Two promises (README, "Reliability"): no command
// overwrites what it reads, and a file a command writes is either the old one or the whole
// new one, never half of each.
//  - Before any work, every path a command will write (the store, -o, --record, a report's
//    folder) is checked against every file it reads, by identity: the same inode through a
//    symbolic link or a hard link is the same file, and so are a store's -wal and -shm files.
//    A path that cannot be written (a directory, a FIFO, a device, a loop of links, a folder
//    nobody may write to) is refused then too, with the flag that named it.
//  - Inputs are read only from regular files: a FIFO would block for ever, /dev/zero would
//    fill the memory.
//  - Outputs are written to a temporary file beside the target, flushed to disk, and renamed
//    over it; a symbolic link stays a link and its target is replaced.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

enum class FileUse {
  read,            // an input file (a job, a recording, a table)
  write,           // an output file, replaced whole
  write_folder,    // an output folder (a report's): the files it gets are named in FileRole::files
  store,           // a results store that is read and written, with its -wal and -shm files
  store_readonly,  // a results store that is only read
};

struct FileRole {
  FileUse use;
  std::string flag;  // what named it, for messages: "--db", "-o", "--record", "--config"
  std::filesystem::path path;
  std::vector<std::string> files = {};  // write_folder: the names written inside it
};

// InputError "FLAG: PATH ..." when a path written is a file read (or written twice), or cannot
// be written. Inputs that do not exist are left to their readers (which say so); a store that
// does not exist is created by the command, so it counts by its name.
void check_file_roles(const std::vector<FileRole>& roles);

// A folder a command keeps files in (the compile cache): created when missing, else it must be a
// folder this process can write. RuntimeFailure "FLAG: PATH ..." with the reason otherwise, so
// that a cache named wrongly is refused before any work rather than silently unused.
void require_writable_folder(const std::filesystem::path& dir, const std::string& flag);

// What is at `p` when it is not a regular file: "a directory", "a FIFO", "a character device",
// "a block device", "a socket", "a loop of symbolic links"; "" for a regular file or nothing.
std::string special_file_kind(const std::filesystem::path& p);

// Before an input is read: InputError "WHAT: is a FIFO, not a file" (or a directory, a
// device, ...) or "WHAT: is N bytes, more than ..." when it is larger than `max_bytes` (a
// job, a table or a recording is read whole into memory). Nothing when it is missing: the
// reader says so in its own words.
inline constexpr uintmax_t kMaxInputBytes = uintmax_t(1) << 30;
void check_input_file(const std::filesystem::path& p, const std::string& what, uintmax_t max_bytes = kMaxInputBytes);

// Writes `text` to a temporary file beside `file` (beside a link's target), flushes it to the
// disk and renames it over the file; the folder is created when missing. RuntimeFailure
// naming the file and the system's reason (a full disk, say); the old file is then untouched.
void write_file_replacing(const std::filesystem::path& file, std::string_view text);

// A file several processes add to (the runtime's online decisions, its record of untuned
// problems): under an exclusive lock on the file (flock), `more` is given what the file holds
// and returns what to append ("": nothing), which is written at its end in one write. The file
// is created when missing (its folder must exist). RuntimeFailure naming the file and the
// system's reason when it cannot be opened, locked or written.
void append_locked(const std::filesystem::path& file, const std::function<std::string(const std::string&)>& more);
// What a file that others append to (append_locked) holds, read under a shared lock; "" when
// it does not exist. RuntimeFailure when it exists and cannot be read.
std::string read_locked(const std::filesystem::path& file);

}  // namespace gt
