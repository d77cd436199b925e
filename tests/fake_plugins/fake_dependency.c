/* A library the "missingdep" fake plugin links against and that is kept out of
   every folder the dynamic loader searches, so that loading the plugin fails
   the way a plugin fails when, say, libcudart is not installed. */
__attribute__((visibility("default"))) int fake_dependency_answer(void);
__attribute__((visibility("default"))) int fake_dependency_answer(void) { return 42; }
