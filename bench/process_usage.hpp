#pragma once
// CPU and memory of processes and threads, from /proc and the thread CPU clocks.

#include <pthread.h>
#include <sys/types.h>

#include <vector>

namespace pushonce::bench {

/// VmRSS of a process in bytes (0 when it cannot be read); pid 0 is this process.
double rss_bytes(pid_t pid);
/// user + system CPU seconds of a process (0 when it cannot be read).
double cpu_seconds(pid_t pid);
/// CPU seconds of a thread of this process.
double thread_cpu_seconds(pthread_t thread);
double sum_rss(const std::vector<pid_t>& pids);
double sum_cpu(const std::vector<pid_t>& pids);

}  // namespace pushonce::bench
