// runtime/device_cache.hpp with many threads and several fake devices: each (device, key) loads
// exactly once however many threads ask at once, every device gets its own value, failures are
// cached, one device's load does not block another device, and a load in progress does not block
// lookups of what is already there. Also built with ThreadSanitizer (test_device_cache_tsan).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/runtime/device_cache.hpp"

namespace {

using jax_aiter::runtime::PerDeviceCache;
using namespace std::chrono_literals;

struct Entry {
  jax_aiter::Status status;
  int value = 0;
};

constexpr int kDevices = 4;
constexpr int kKeys = 6;

int expected(int device, int key) { return device * 1000 + key; }

// Threads released together all ask for every (device, key): each is loaded once (the loader is
// slow, so without the re-check under the load lock every waiting thread would load again), and
// each thread sees its device's value (a cache that ignored the device would hand device 0's value
// to the others).
TEST(PerDeviceCache, EachDeviceAndKeyLoadsOnceUnderContention) {
  PerDeviceCache<int, Entry> cache;
  std::array<std::array<std::atomic<int>, kKeys>, kDevices> loads{};
  constexpr int kThreads = 16;
  std::barrier start(kThreads);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kDevices * kKeys; ++i) {
        const int device = (i + t) % kDevices, key = (i / kDevices + t) % kKeys;
        const Entry& e = cache.get_or_load(device, key, [&] {
          loads[device][key].fetch_add(1);
          std::this_thread::sleep_for(2ms);
          return Entry{{}, expected(device, key)};
        });
        if (e.value != expected(device, key)) wrong.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  for (int d = 0; d < kDevices; ++d) {
    EXPECT_EQ(cache.size(d), static_cast<size_t>(kKeys)) << "device " << d;
    for (int k = 0; k < kKeys; ++k) EXPECT_EQ(loads[d][k].load(), 1) << d << "," << k;
  }
}

// All threads ask for one key of one device at the same moment: exactly one load.
TEST(PerDeviceCache, SimultaneousFirstRequestsLoadOnce) {
  PerDeviceCache<int, Entry> cache;
  std::atomic<int> loads{0};
  constexpr int kThreads = 12;
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  std::atomic<const Entry*> first{nullptr};
  std::atomic<int> different{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      const Entry& e = cache.get_or_load(3, 7, [&] {
        loads.fetch_add(1);
        std::this_thread::sleep_for(20ms);
        return Entry{{}, 42};
      });
      const Entry* expected_ptr = nullptr;
      if (!first.compare_exchange_strong(expected_ptr, &e) && expected_ptr != &e) {
        different.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(loads.load(), 1);
  EXPECT_EQ(different.load(), 0) << "every thread gets the one entry";
}

TEST(PerDeviceCache, FailuresAreCachedNotRetried) {
  PerDeviceCache<int, Entry> cache;
  int loads = 0;
  auto failing = [&] {
    ++loads;
    return Entry{jax_aiter::NotFound("no code object"), 0};
  };
  const Entry& a = cache.get_or_load(0, 1, failing);
  const Entry& b = cache.get_or_load(0, 1, failing);
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(b.status.code(), jax_aiter::ErrorCode::kNotFound);
  // The same key on another device is its own entry.
  cache.get_or_load(1, 1, failing);
  EXPECT_EQ(loads, 2);
}

// A load that never finishes on device 0 (until released) must not hold up device 1, nor lookups
// of entries device 0 already has.
TEST(PerDeviceCache, ALoadBlocksNeitherOtherDevicesNorPresentEntries) {
  PerDeviceCache<int, Entry> cache;
  cache.get_or_load(0, 1, [] { return Entry{{}, 1}; });
  std::mutex m;
  std::condition_variable cv;
  bool release = false, loading = false;
  std::thread slow([&] {
    cache.get_or_load(0, 2, [&] {
      std::unique_lock lock(m);
      loading = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
      return Entry{{}, 2};
    });
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return loading; });
  }
  auto other_device = std::async(std::launch::async, [&] {
    return cache.get_or_load(1, 2, [] { return Entry{{}, 12}; }).value;
  });
  auto present = std::async(std::launch::async, [&] {
    const Entry* e = cache.find(0, 1);
    return e ? e->value : -1;
  });
  EXPECT_EQ(other_device.wait_for(5s), std::future_status::ready) << "device 1 waited for device 0";
  EXPECT_EQ(present.wait_for(5s), std::future_status::ready) << "a lookup waited for a load";
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  slow.join();
  EXPECT_EQ(other_device.get(), 12);
  EXPECT_EQ(present.get(), 1);
  EXPECT_EQ(cache.find(0, 2)->value, 2);
}

TEST(PerDeviceCache, ReferencesStayValidAsTheCacheGrows) {
  PerDeviceCache<int, Entry> cache;
  const Entry& first = cache.get_or_load(0, -1, [] { return Entry{{}, 99}; });
  for (int k = 0; k < 5000; ++k) cache.get_or_load(k % 3, k, [k] { return Entry{{}, k}; });
  EXPECT_EQ(&cache.get_or_load(0, -1, [] { return Entry{{}, 0}; }), &first);
  EXPECT_EQ(first.value, 99);
  EXPECT_EQ(cache.find(5, 0), nullptr);
}

}  // namespace
