// The subcommands of the `rill` tool. Each lives in its own file and returns
// the process exit code.
#pragma once

namespace rill_cli {

// The whole command line (argv[0] is the program): the subcommand argv[1]
// names runs with the rest, or the usage is printed. Returns the exit code.
int dispatch(int argc, char** argv);


int info_main(int argc, char** argv);   // rill info
int bench_main(int argc, char** argv);  // rill bench
int demo_main(int argc, char** argv);   // rill demo: the README's main job
int run_main(int argc, char** argv);    // rill run: a decoder stack over .npy hidden states
int model_demo_main(int argc, char** argv);  // rill demo: a decoder stack; --ops runs demo_main
int logits_main(int argc, char** argv);      // rill logits: a Hugging Face folder's logits for token ids
int tokenize_main(int argc, char** argv);  // rill tokenize: the ids of a text under a tokenizer.json
int generate_main(int argc, char** argv);  // rill generate: text from a Hugging Face model folder
int quantize_main(int argc, char** argv);  // rill quantize: a GGUF file's matrices in a block format

}  // namespace rill_cli
