/*
 * Turns in trace order (turn.h): a counter under a mutex, waited on with a
 * condition variable. The waits are short in practice: symbolizing a trace
 * takes a fraction of the time its replay does.
 */
#include "turn.h"

void gs_turn_init(struct gs_turn *t)
{
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->next = 0;
}

void gs_turn_destroy(struct gs_turn *t)
{
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
}

void gs_turn_take(struct gs_turn *t, size_t i)
{
    pthread_mutex_lock(&t->mu);
    while (t->next != i)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

void gs_turn_give(struct gs_turn *t, size_t i)
{
    pthread_mutex_lock(&t->mu);
    if (t->next == i)
        t->next = i + 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

void gs_turn_skip(struct gs_turn *t, size_t i)
{
    pthread_mutex_lock(&t->mu);
    while (t->next < i)
        pthread_cond_wait(&t->cv, &t->mu);
    if (t->next == i) {
        t->next = i + 1;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
}
