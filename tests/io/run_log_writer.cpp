// The writer of the SIGKILL drill: appends /train rows for steps [first, last] (with /eval and
// /diagnostics rows at their intervals) as fast as it can, printing each step to stdout once the
// file holds it. With --resume it first resumes the run at step first-1.
//   attnlab_io_run_log_writer RUN.h5 FIRST LAST [--resume]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "core/io/run_log.h"
#include "io/drill_rows.h"

int main(int argc, char** argv) {
  using attnlab::io::RunLog;
  namespace test = attnlab::test;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s RUN.h5 FIRST LAST [--resume]\n", argv[0]);
    return 2;
  }
  try {
    std::string path = argv[1];
    int64_t first = std::atoll(argv[2]);
    int64_t last = std::atoll(argv[3]);
    bool resume = argc > 4 && std::strcmp(argv[4], "--resume") == 0;
    attnlab::io::RunInfo info;
    info.run_id = "drill";
    info.config_yaml = "drill: true\n";
    RunLog log = resume ? RunLog::resume(path, first - 1)
                        : RunLog::create(path, info, {{"model.heads", "4"}});
    for (int64_t step = first; step <= last; ++step) {
      log.append_train(test::drill_train_row(step));
      if (step % test::kDrillEvalEvery == 0) log.append_eval(test::drill_eval_row(step));
      if (step % test::kDrillDiagnosticEvery == 0) {
        log.append_diagnostic("grad_norm", step, {4}, test::drill_grad_norms(step));
      }
      std::printf("%lld\n", static_cast<long long>(step));
      std::fflush(stdout);
    }
    log.set_status(attnlab::io::RunStatus::completed);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "run_log_writer: %s\n", error.what());
    return 1;
  }
  return 0;
}
