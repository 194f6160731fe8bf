// The process's shared thread pool (LoadOptions::shared_pool): one set of workers for every Program loaded
// with it, so several Programs, or several threads calling run, do not oversubscribe the cores: one run at
// a time holds the workers, up to one per core more run inline beside it, the rest wait (ThreadPool::Session).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/thread_pool.h"

namespace webxnn {

// The shared pool, created on first use with one thread per core and ThreadPool::default_spin_us().
std::shared_ptr<ThreadPool> shared_pool();
// Replaces the shared pool by one of `threads` threads (0 = one per core) polling `spin_us`. Programs loaded
// before keep the pool they were loaded with (it lives as long as they do).
void set_shared_pool(size_t threads, uint32_t spin_us);

}  // namespace webxnn
