#include "runtime/shared_pool.h"

#include <mutex>

namespace webxnn {
namespace {

std::mutex g_mutex;
std::shared_ptr<ThreadPool>& g_pool() {
  static std::shared_ptr<ThreadPool> pool;
  return pool;
}

}  // namespace

std::shared_ptr<ThreadPool> shared_pool() {
  std::lock_guard<std::mutex> lk(g_mutex);
  auto& p = g_pool();
  if (!p) p = std::make_shared<ThreadPool>(0);
  return p;
}

void set_shared_pool(size_t threads, uint32_t spin_us) {
  auto fresh = std::make_shared<ThreadPool>(threads, spin_us);
  std::shared_ptr<ThreadPool> old;
  {
    std::lock_guard<std::mutex> lk(g_mutex);
    old = std::move(g_pool());
    g_pool() = std::move(fresh);
  }
  // `old` is joined here, outside the lock, unless a Program still holds it.
}

}  // namespace webxnn
