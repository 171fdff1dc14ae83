/*
 * Preprocessor helpers for the X-macro tables (records.def): one macro
 * applied to each field tuple of a record. A record lists its fields as
 * parenthesized tuples, (enc, member, ...); since a tuple is no macro call,
 * the same list can be walked several times inside one expansion, each time
 * with another field macro (the parameters of an encoder, then its body).
 *
 *   GS_PP_EACH(m, ctx, (a, b), (c, d))  ->  m(ctx, a, b) m(ctx, c, d)
 *
 * ctx is handed to every call unchanged (a record's union member, say). A
 * list holds 1 to GS_PP_MAX tuples; a longer one is a compile error (the
 * count comes out as a tuple, and GS_PP_EACH_( is no token), never a silent
 * truncation.
 */
#ifndef GCSPY_PP_H
#define GCSPY_PP_H

#define GS_PP_MAX 20

#define GS_PP_EXPAND(...) __VA_ARGS__
#define GS_PP_CAT(a, b) GS_PP_CAT_(a, b)
#define GS_PP_CAT_(a, b) a##b

/* m(ctx, the tuple's elements) */
#define GS_PP_CALL(m, c, t) GS_PP_CALL_(m, c, GS_PP_EXPAND t)
#define GS_PP_CALL_(m, ...) m(__VA_ARGS__)

#define GS_PP_EACH(m, c, ...) GS_PP_CAT(GS_PP_EACH_, GS_PP_COUNT(__VA_ARGS__))(m, c, __VA_ARGS__)
#define GS_PP_COUNT(...) GS_PP_COUNT_(__VA_ARGS__, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, \
                                      10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define GS_PP_COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, \
                     _16, _17, _18, _19, _20, n, ...) n

#define GS_PP_EACH_1(m, c, t) GS_PP_CALL(m, c, t)
#define GS_PP_EACH_2(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_1(m, c, __VA_ARGS__)
#define GS_PP_EACH_3(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_2(m, c, __VA_ARGS__)
#define GS_PP_EACH_4(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_3(m, c, __VA_ARGS__)
#define GS_PP_EACH_5(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_4(m, c, __VA_ARGS__)
#define GS_PP_EACH_6(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_5(m, c, __VA_ARGS__)
#define GS_PP_EACH_7(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_6(m, c, __VA_ARGS__)
#define GS_PP_EACH_8(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_7(m, c, __VA_ARGS__)
#define GS_PP_EACH_9(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_8(m, c, __VA_ARGS__)
#define GS_PP_EACH_10(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_9(m, c, __VA_ARGS__)
#define GS_PP_EACH_11(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_10(m, c, __VA_ARGS__)
#define GS_PP_EACH_12(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_11(m, c, __VA_ARGS__)
#define GS_PP_EACH_13(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_12(m, c, __VA_ARGS__)
#define GS_PP_EACH_14(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_13(m, c, __VA_ARGS__)
#define GS_PP_EACH_15(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_14(m, c, __VA_ARGS__)
#define GS_PP_EACH_16(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_15(m, c, __VA_ARGS__)
#define GS_PP_EACH_17(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_16(m, c, __VA_ARGS__)
#define GS_PP_EACH_18(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_17(m, c, __VA_ARGS__)
#define GS_PP_EACH_19(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_18(m, c, __VA_ARGS__)
#define GS_PP_EACH_20(m, c, t, ...) GS_PP_CALL(m, c, t) GS_PP_EACH_19(m, c, __VA_ARGS__)

#endif /* GCSPY_PP_H */
