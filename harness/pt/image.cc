#include "harness/pt/image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

namespace perftest::pt {

Result<void> Image::AddBlob(uint64_t vaddr, std::span<const uint8_t> bytes, std::string name) {
  const std::string call = fmt::format("pt::Image::AddBlob(vaddr={:#x}, size={})", vaddr, bytes.size());
  if (bytes.empty() || vaddr + bytes.size() < vaddr) return Result<void>::Failure(EINVAL, call);
  Section s;
  s.vaddr = vaddr;
  s.size = bytes.size();
  s.name = name.empty() ? fmt::format("blob@{:#x}", vaddr) : std::move(name);
  s.data = std::make_shared<const std::vector<uint8_t>>(bytes.begin(), bytes.end());
  Insert(std::move(s));
  return Result<void>::Ok();
}

Result<void> Image::AddFile(const std::string& path, uint64_t offset, uint64_t size, uint64_t vaddr) {
  const std::string call =
      fmt::format("pt::Image::AddFile(path=\"{}\", offset={:#x}, size={:#x}, vaddr={:#x})", path, offset, size, vaddr);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Result<void>::Failure(errno, call);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Result<void>::Failure(err, call);
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (offset >= file_size) {
    ::close(fd);
    return Result<void>::Failure(EINVAL, call);
  }
  uint64_t n = file_size - offset;
  if (size != 0 && size < n) n = size;
  if (vaddr + n < vaddr) {
    ::close(fd);
    return Result<void>::Failure(EINVAL, call);
  }
  auto data = std::make_shared<std::vector<uint8_t>>(n);
  uint64_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, data->data() + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int err = r < 0 ? errno : EIO;
      ::close(fd);
      return Result<void>::Failure(err, call);
    }
    done += static_cast<uint64_t>(r);
  }
  ::close(fd);
  Section s;
  s.vaddr = vaddr;
  s.size = n;
  s.name = path;
  s.data = std::move(data);
  Insert(std::move(s));
  return Result<void>::Ok();
}

Result<void> Image::AddMmap(const std::string& filename, uint64_t addr, uint64_t len, uint64_t pgoff) {
  if (filename.empty() || filename[0] != '/') {
    return Result<void>::Failure(
        ENOENT, fmt::format("pt::Image::AddMmap(filename=\"{}\", addr={:#x}, len={:#x}, pgoff={:#x})", filename,
                            addr, len, pgoff));
  }
  return AddFile(filename, pgoff, len, addr);
}

void Image::Clear() {
  sections_.clear();
  last_ = 0;
  ++generation_;
}

void Image::Insert(Section s) {
  // Cut what the new section overlaps out of the old ones.
  std::vector<Section> out;
  out.reserve(sections_.size() + 2);
  for (Section& old : sections_) {
    if (old.end() <= s.vaddr || old.vaddr >= s.end()) {
      out.push_back(std::move(old));
      continue;
    }
    if (old.vaddr < s.vaddr) {  // the part below
      Section lo = old;
      lo.size = s.vaddr - old.vaddr;
      out.push_back(std::move(lo));
    }
    if (old.end() > s.end()) {  // the part above
      Section hi = old;
      hi.data_offset += s.end() - old.vaddr;
      hi.vaddr = s.end();
      hi.size = old.end() - s.end();
      out.push_back(std::move(hi));
    }
  }
  out.push_back(std::move(s));
  std::sort(out.begin(), out.end(), [](const Section& a, const Section& b) { return a.vaddr < b.vaddr; });
  sections_ = std::move(out);
  last_ = 0;
  ++generation_;
}

std::span<const uint8_t> Image::Read(uint64_t ip) const {
  auto view = [ip](const Section& s) {
    const uint64_t off = ip - s.vaddr;
    return std::span<const uint8_t>(s.data->data() + s.data_offset + off, s.size - off);
  };
  if (last_ < sections_.size()) {
    const Section& s = sections_[last_];
    if (ip >= s.vaddr && ip < s.end()) return view(s);
  }
  auto it = std::upper_bound(sections_.begin(), sections_.end(), ip,
                             [](uint64_t a, const Section& s) { return a < s.vaddr; });
  if (it == sections_.begin()) return {};
  --it;
  if (ip >= it->end()) return {};
  last_ = static_cast<size_t>(it - sections_.begin());
  return view(*it);
}

}  // namespace perftest::pt
