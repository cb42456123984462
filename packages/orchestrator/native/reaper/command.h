/* burrow-reaper's command requests (command.c). */
#ifndef BURROW_REAPER_COMMAND_H
#define BURROW_REAPER_COMMAND_H

#include <signal.h>
#include <stddef.h>

/* In a forked worker: run argv (argv[0] looked up in a fixed PATH) with stdin_start…, then the rest of the
 * connection, as its stdin, and stream its output and exit status to conn as frames. Never returns. */
void run_command(int conn, char *const argv[], const char *stdin_start, size_t stdin_len, const sigset_t *blocked)
    __attribute__((noreturn));

#endif
