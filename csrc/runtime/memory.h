// Owned aligned memory and the blob storage (an owned copy or a read-only file mapping).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace webxnn {

constexpr size_t kArenaAlignment = 64;

inline size_t align_up(size_t x, size_t a) { return (x + (a - 1)) / a * a; }

// A heap buffer aligned to kArenaAlignment. Allocation failure throws std::bad_alloc. With huge_pages, a
// buffer of several megabytes is 2 MiB aligned and offered to the kernel for transparent huge pages.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size, bool zero = false, bool huge_pages = false);
  uint8_t* data() { return ptr_.get(); }
  const uint8_t* data() const { return ptr_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> ptr_;
  size_t size_ = 0;
};

// The bytes of a loaded blob: either an owned 64-aligned copy or a read-only mmap of a file.
class BlobStorage {
 public:
  static std::shared_ptr<BlobStorage> copy_of(const void* data, size_t size);
  static std::shared_ptr<BlobStorage> map_file(const std::string& path);  // throws Error(kIO)
  // Memory the caller guarantees immutable while `owner` lives (e.g. a Python bytes object): no copy.
  static std::shared_ptr<BlobStorage> borrow(const void* data, size_t size, std::shared_ptr<void> owner);
  ~BlobStorage();
  BlobStorage(const BlobStorage&) = delete;
  BlobStorage& operator=(const BlobStorage&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  BlobStorage() = default;
  AlignedBuffer owned_;
  std::shared_ptr<void> owner_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace webxnn
