// `rill`: the command-line front of the runtime (info, bench, demo, ...).
#include "commands.h"

int main(int argc, char** argv) { return rill_cli::dispatch(argc, argv); }
