/* SPDX-License-Identifier: MIT */
/* The constraint solver behind covering arrays (cover-solve.c): can a partial row be completed? */
#pragma once

#include "cover-model.h"

struct cover_solver;

/*
 * Build the solver for a model whose shape was already validated. Returns NULL
 * when the model has no forbidden pattern that can ever match, which callers
 * treat as "everything is valid".
 */
struct cover_solver *cover_solver_new(const struct mx_cover_model *m);
struct cover_solver *cover_solver_free(struct cover_solver *s);
/* True when the partial row (-1 = free) can be completed to a valid row. */
bool cover_solver_extendable(struct cover_solver *s, const int *partial);
/* True when some forbidden pattern mentions parameter p. */
bool cover_solver_constrains(const struct cover_solver *s, size_t p);
/* True when the complete row matches no pattern; only patterns mentioning p are checked when p < n. */
bool cover_solver_row_ok(const struct cover_solver *s, const int *row, size_t p);
