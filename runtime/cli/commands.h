// The subcommands of the `rill` tool. Each lives in its own file and returns
// the process exit code.
#pragma once

namespace rill_cli {

int info_main(int argc, char** argv);   // rill info
int bench_main(int argc, char** argv);  // rill bench
int demo_main(int argc, char** argv);   // rill demo: the README's main job

}  // namespace rill_cli
