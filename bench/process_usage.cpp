#include "bench/process_usage.hpp"

#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace pushonce::bench {

double rss_bytes(pid_t pid) {
  std::ifstream f(pid == 0 ? std::string("/proc/self/status")
                           : fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
  return 0;
}

double cpu_seconds(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 0; rest >> field; ++i) {  // fields from the 3rd: state is i=0, utime i=11
    if (i == 11) utime = std::stod(field);
    if (i == 12) {
      stime = std::stod(field);
      break;
    }
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double thread_cpu_seconds(pthread_t thread) {
  clockid_t id{};
  if (pthread_getcpuclockid(thread, &id) != 0) return 0;
  timespec ts{};
  if (clock_gettime(id, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double sum_rss(const std::vector<pid_t>& pids) {
  double s = 0;
  for (auto p : pids) s += rss_bytes(p);
  return s;
}

double sum_cpu(const std::vector<pid_t>& pids) {
  double s = 0;
  for (auto p : pids) s += cpu_seconds(p);
  return s;
}

}  // namespace pushonce::bench
