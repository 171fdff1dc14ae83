/*
 * Turns in trace order for traces analysed at the same time (`gcspy report
 * -j N`): the analysis of trace i (the reading and the replay, most of the
 * work) runs on any thread, but its symbolization waits until every trace
 * before it is symbolized. The symbolizer is shared (one cache for all the
 * traces of a report) and is not thread-safe; taking it in trace order also
 * leaves it in the same state after each trace as one thread would, so the
 * report (its frame strings, its list of unreadable modules) is the same
 * byte for byte whatever N is.
 *
 * What must stay true: every index from 0 to n-1 passes exactly once
 * (gs_turn_take + gs_turn_give, or gs_turn_skip when the trace never got
 * as far as symbolizing), and the indices are handed to threads in
 * increasing order, so the thread holding the lowest unfinished index never
 * waits for another: no deadlock.
 */
#ifndef GCSPY_TURN_H
#define GCSPY_TURN_H

#include <pthread.h>
#include <stddef.h>

struct gs_turn {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t next;            /* the index whose turn it is */
};

void gs_turn_init(struct gs_turn *t);
void gs_turn_destroy(struct gs_turn *t);
/* Waits for index i's turn (the symbolizer is then i's alone). */
void gs_turn_take(struct gs_turn *t, size_t i);
/* Ends i's turn: i + 1 may go. */
void gs_turn_give(struct gs_turn *t, size_t i);
/* After i's analysis, whether or not it took its turn: if it did not (the
 * trace could not be read), waits for it and passes it on. */
void gs_turn_skip(struct gs_turn *t, size_t i);

#endif /* GCSPY_TURN_H */
