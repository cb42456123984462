#!/usr/bin/env node
// The `burrow` executable: a committed, executable entry (npm bins, /usr/local/bin/burrow) in front of the build
// output, so that the command works whatever file mode the compiler gives dist/main.js.
import "../dist/main.js";
