/* lexer.h - tokens of the schema language (lexer.re, compiled by re2c). */
#ifndef IGW_GEN_LEXER_H
#define IGW_GEN_LEXER_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef enum igw_tok {
    TOK_EOF = 0,
    TOK_ERROR,  /* bad byte or unterminated string; text holds the message */
    TOK_IDENT,  /* letters, digits, '_' (keywords are contextual identifiers) */
    TOK_STRING, /* "..." ; text holds the decoded value */
    TOK_INT,    /* decimal digits; value holds it (saturates past INT64_MAX) */
    TOK_LBRACE, TOK_RBRACE, TOK_LPAREN, TOK_RPAREN,
    TOK_SEMI, TOK_COLON, TOK_COMMA, TOK_DOT, TOK_DOTDOT,
    TOK_EQ, TOK_NE, TOK_LT, TOK_LE, TOK_GT, TOK_GE,
    TOK_ARROW, TOK_MINUS, TOK_STAR
} igw_tok;

typedef struct igw_token {
    igw_tok kind;
    const char *text; /* identifier / decoded string / error message (owned) */
    int64_t value;
    igw_loc loc;
} igw_token;

typedef struct igw_lexer {
    const char *file;
    const char *buf, *cur, *lim, *line_start;
    int line;
} igw_lexer;

/* Starts lexing `len` bytes of `buf` (which must have a NUL at buf[len]). */
void igw_lexer_init(igw_lexer *lx, const char *file, const char *buf, size_t len);
/* Returns the next token; comments and whitespace are skipped. */
igw_token igw_lexer_next(igw_lexer *lx);
/* Printable name of a token kind for messages ("';'", "identifier"). */
const char *igw_tok_name(igw_tok kind);

#endif
