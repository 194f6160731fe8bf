#include "runtime/memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime/status.h"

namespace webxnn {

AlignedBuffer::AlignedBuffer(size_t size, bool zero, bool huge_pages) : size_(size) {
  constexpr size_t kHugePage = size_t(2) << 20;
  constexpr size_t kHugeMin = size_t(4) << 20;  // smaller buffers would waste too much of their last page
  // Always allocate at least one line so data() is never null.
  const bool huge = huge_pages && size >= kHugeMin;
  const size_t align = huge ? kHugePage : kArenaAlignment;
  const size_t bytes = align_up(size == 0 ? 1 : size, align);
  if (bytes < size) throw std::bad_alloc();
  void* p = nullptr;
  if (posix_memalign(&p, align, bytes) != 0 || p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge) (void)::madvise(p, bytes, MADV_HUGEPAGE);  // advisory: ignored where unsupported
#endif
  ptr_.reset(static_cast<uint8_t*>(p));
  if (zero) std::memset(p, 0, bytes);
}

void AlignedBuffer::Free::operator()(uint8_t* p) const { std::free(p); }

std::shared_ptr<BlobStorage> BlobStorage::copy_of(const void* data, size_t size) {
  std::shared_ptr<BlobStorage> s(new BlobStorage());  // private constructor: make_shared cannot reach it
  s->owned_ = AlignedBuffer(size);
  if (size) std::memcpy(s->owned_.data(), data, size);
  s->data_ = s->owned_.data();
  s->size_ = size;
  return s;
}

std::shared_ptr<BlobStorage> BlobStorage::borrow(const void* data, size_t size, std::shared_ptr<void> owner) {
  if (!data || !size) return copy_of(data, size);
  std::shared_ptr<BlobStorage> s(new BlobStorage());
  s->owner_ = std::move(owner);
  s->data_ = static_cast<const uint8_t*>(data);
  s->size_ = size;
  return s;
}

std::shared_ptr<BlobStorage> BlobStorage::map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(StatusCode::kIO, "cannot open '" + path + "': " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(StatusCode::kIO, "cannot stat '" + path + "': " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(StatusCode::kIO, "'" + path + "' is not a regular file");
  }
  std::shared_ptr<BlobStorage> s(new BlobStorage());
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    s->owned_ = AlignedBuffer(0);
    s->data_ = s->owned_.data();
    return s;
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) fail(StatusCode::kIO, "cannot map '" + path + "': " + std::strerror(e));
  s->map_ = m;
  s->map_size_ = size;
  s->data_ = static_cast<const uint8_t*>(m);
  s->size_ = size;
  return s;
}

BlobStorage::~BlobStorage() {
  if (map_) ::munmap(map_, map_size_);
}

}  // namespace webxnn
