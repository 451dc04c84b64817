// A second process for the multi-process tests of the SQLite engine (sqlite_store_test.cpp).
// Reports progress on stdout, one line per event, flushed at once.
//
//   write <url> <container> <pk> <id-prefix> <count> [hang]
//       creates <id-prefix><i> for i < count, printing each id after its commit; then "done", and
//       with "hang" waits to be killed.
//   group-write <url> <container> <pk> <threads> [hang]
//       <threads> threads write two-document batches ("t<k>-<i>-a", "t<k>-<i>-b") at once, so that
//       they share group commits; every fourth batch also re-creates "taken" and must fail whole.
//       Prints "ok t<k>-<i>" after a batch committed and "failed t<k>-<i>" after one failed as
//       planned; with "hang" runs until killed.
//   increment <url> <container> <pk> <id> <count>
//       patch-increments /n of the document `count` times; then "done".
//   wait-then-write <url> <container> <timeout-ms> <reply-container>
//       prints "ready" once positioned at the end of the container's feed, waits for a change,
//       prints "woke <0|1> <elapsed-ms>", creates document "reply" in <reply-container>, "done".
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

using namespace hcprp;
using namespace hcprp::store;

namespace {

void Say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

[[noreturn]] void Fail(const std::string& what) {
  Say("error " + what);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) Fail("usage");
  std::string cmd = argv[1];
  SystemClock clock;
  auto opened = OpenStore(argv[2], {.clock = &clock});
  if (!opened.ok()) Fail(opened.error().ToString());
  Store& s = **opened;
  if (cmd == "write" && argc >= 7) {
    std::string container = argv[3], pk = argv[4], prefix = argv[5];
    int count = std::atoi(argv[6]);
    for (int i = 0; i < count; ++i) {
      std::string id = prefix + std::to_string(i);
      json::object body;
      body["i"] = i;
      body["pad"] = std::string(200, 'x');
      auto r = s.Create(container, pk, id, body);
      if (!r.ok()) Fail(r.error().ToString());
      Say(id);
    }
    Say("done");
    if (argc >= 8 && std::string(argv[7]) == "hang") {
      while (true) pause();
    }
    return 0;
  }
  if (cmd == "group-write" && argc >= 6) {
    std::string container = argv[3], pk = argv[4];
    int threads = std::atoi(argv[5]);
    auto taken = s.Upsert(container, pk, "taken", json::object{});
    if (!taken.ok()) Fail(taken.error().ToString());
    std::vector<std::thread> workers;
    for (int k = 0; k < threads; ++k) {
      workers.emplace_back([&s, container, pk, k] {
        for (int i = 0;; ++i) {
          std::string name = "t" + std::to_string(k) + "-" + std::to_string(i);
          bool doomed = i % 4 == 3;
          std::vector<WriteOp> ops{WriteOp::Create(name + "-a", json::object{{"i", i}}),
                                   WriteOp::Create(name + "-b", json::object{{"i", i}})};
          if (doomed) ops.push_back(WriteOp::Create("taken", json::object{}));
          auto r = s.Batch(container, pk, std::move(ops));
          if (doomed) {
            if (r.ok() || !r.error().IsAlreadyExists()) Fail("batch " + name + " did not fail as planned");
            Say("failed " + name);
          } else {
            if (!r.ok()) Fail(r.error().ToString());
            Say("ok " + name);
          }
        }
      });
    }
    for (auto& w : workers) w.join();
    return 0;
  }
  if (cmd == "increment" && argc >= 7) {
    int count = std::atoi(argv[6]);
    for (int i = 0; i < count; ++i) {
      auto r = s.Patch(argv[3], argv[4], argv[5], {{PatchOp::Kind::kIncrement, "/n", 1}});
      if (!r.ok()) Fail(r.error().ToString());
    }
    Say("done");
    return 0;
  }
  if (cmd == "wait-then-write" && argc >= 6) {
    std::string container = argv[3];
    auto now = s.ReadChanges(container, kChangeFeedNow, 1);
    if (!now.ok()) Fail(now.error().ToString());
    Say("ready");
    auto t0 = std::chrono::steady_clock::now();
    auto w = s.WaitForChanges(container, now->continuation, std::chrono::milliseconds(std::atoi(argv[4])));
    if (!w.ok()) Fail(w.error().ToString());
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    Say("woke " + std::to_string(*w ? 1 : 0) + " " + std::to_string(ms));
    auto r = s.Create(argv[5], "p", "reply", json::object{});
    if (!r.ok()) Fail(r.error().ToString());
    Say("done");
    return 0;
  }
  Fail("bad command " + cmd);
}
