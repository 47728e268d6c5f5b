# rat-py's helper inside an IRkernel (R) kernel.
#
# rat-py evaluates this file once per kernel in a fresh environment that it
# keeps in options(rat.helper = ...): never in .GlobalEnv (ls() and reset do
# not see it) and not on the search path (it shadows nothing of the user's).
# It then calls, from non-silent, no-history execute_requests whose output it
# keeps to itself (IRkernel has no user_expressions and prints nothing for
# silent executes):
#     getOption("rat.helper")$snap()
#     getOption("rat.helper")$inspect("<JSON list of path segments>")
# Each prints one line of JSON (jsonlite, an IRkernel dependency).
#
# Everything is bounded, whatever the user's objects are: values are shown
# from their first few elements (never printed or deparsed whole), nesting is
# cut after two levels, and each call runs under an elapsed-time limit.
# Active bindings are never called.

OVERVIEW_ROWS <- 25L   # rows in the variables overview
OVERVIEW_VALUE <- 80L  # characters of a value in the overview
REPR_MAX <- 300L       # characters of the `= value` line
CHILD_ROWS <- 20L      # children listed by inspect
CHILD_VALUE <- 60L     # characters of a child's value
DOC_MAX <- 500L        # characters of a help description
SNAP_TIME <- 0.5       # seconds for the overview (it runs after every execution)
INSPECT_TIME <- 2      # seconds for one inspect

emit <- function(x) {
    cat(jsonlite::toJSON(x, auto_unbox = TRUE, null = "null", na = "null", digits = NA), "\n", sep = "")
    invisible(NULL)
}

# Runs expr under an elapsed-time limit; on timeout (or any error) returns
# on_error(condition message).
limited <- function(seconds, expr, on_error) {
    setTimeLimit(elapsed = seconds, transient = TRUE)
    on.exit(setTimeLimit(elapsed = Inf))
    tryCatch(expr, error = function(e) on_error(conditionMessage(e)))
}

cut_text <- function(s, n) {
    s <- tryCatch(gsub("[\r\n\t]+", " ", s, useBytes = FALSE), error = function(e) "<unprintable>")
    if (length(s) != 1L || is.na(s)) return("NA")
    w <- tryCatch(nchar(s, type = "chars"), error = function(e) nchar(s, type = "bytes"))
    if (w > n) paste0(substr(s, 1L, n - 3L), "...") else s
}

type_name <- function(x) {
    cl <- tryCatch(class(x), error = function(e) "?")
    if (length(cl) == 0L) "?" else cl[[1L]]
}

# One element of an atomic vector, R style.
scalar_text <- function(v) {
    if (is.character(v)) {
        if (is.na(v)) "NA" else encodeString(v, quote = "\"")
    } else if (is.factor(v)) {
        encodeString(as.character(v), quote = "\"")
    } else {
        format(v, digits = 7L)
    }
}

# A bounded one-line rendering: the value as R would write it, from at most
# a few elements per level and two levels deep.
value_text <- function(x, width, level = 2L) {
    if (is.null(x)) return("NULL")
    if (is.function(x)) {
        a <- tryCatch(deparse(args(x), width.cutoff = 500L), error = function(e) "function (...)")
        a <- a[a != "NULL"]
        return(cut_text(paste(trimws(a), collapse = " "), width))
    }
    if (is.environment(x)) return(cut_text(format(x), width))
    if (isS4(x)) return(sprintf("<S4 object of class %s>", type_name(x)))
    if (is.data.frame(x)) {
        cols <- utils::head(names(x), 8L)
        more <- if (length(x) > 8L) ", ..." else ""
        return(cut_text(sprintf("<data.frame %d rows \u00d7 %d cols: %s%s>", nrow(x), length(x),
                                paste(cols, collapse = ", "), more), width))
    }
    if (is.factor(x)) {
        n <- length(x)
        head_txt <- paste(vapply(utils::head(as.character(x), 8L), function(v)
            if (is.na(v)) "NA" else encodeString(v, quote = "\""), ""), collapse = ", ")
        return(cut_text(sprintf("factor(%s%s) %d levels", head_txt, if (n > 8L) ", ..." else "",
                                nlevels(x)), width))
    }
    if (is.matrix(x) || (is.array(x) && !is.null(dim(x)))) {
        return(cut_text(sprintf("<%s %s %s>", type_name(x), typeof(x), paste(dim(x), collapse = " \u00d7 ")),
                        width))
    }
    if (is.atomic(x)) {
        n <- length(x)
        if (n == 0L) return(sprintf("%s(0)", typeof(x)))
        k <- min(n, 10L)
        items <- vapply(seq_len(k), function(i) scalar_text(x[[i]]), "")
        nm <- names(x)
        if (!is.null(nm)) {
            nm <- utils::head(nm, k)
            items <- ifelse(nzchar(nm), paste0(nm, " = ", items), items)
        }
        if (n == 1L && is.null(names(x))) return(cut_text(items, width))
        return(cut_text(paste0("c(", paste(items, collapse = ", "), if (n > k) ", ...)" else ")"), width))
    }
    if (is.list(x)) {
        n <- length(x)
        if (n == 0L) return("list()")
        if (level <= 0L) return("list(...)")
        k <- min(n, 8L)
        nm <- names(x)
        items <- vapply(seq_len(k), function(i) {
            v <- value_text(x[[i]], width, level - 1L)
            if (!is.null(nm) && nzchar(nm[[i]])) paste0(nm[[i]], " = ", v) else v
        }, "")
        return(cut_text(paste0("list(", paste(items, collapse = ", "), if (n > k) ", ...)" else ")"), width))
    }
    cut_text(sprintf("<%s>", type_name(x)), width)
}

size_text <- function(x) {
    if (is.data.frame(x)) return(sprintf("(%d rows \u00d7 %d cols)", nrow(x), length(x)))
    if (!is.null(dim(x))) return(sprintf("(%s)", paste(dim(x), collapse = " \u00d7 ")))
    if (is.environment(x)) return(sprintf("(%d objects)", length(ls(x))))
    if (is.function(x) || isS4(x) || is.null(x)) return(NULL)
    n <- length(x)
    if (is.list(x) || n != 1L) return(sprintf("(%d item%s)", n, if (n == 1L) "" else "s"))
    NULL
}

expandable <- function(x) {
    if (is.function(x) || is.null(x)) return(FALSE)
    if (is.environment(x)) return(length(ls(x)) > 0L)
    if (isS4(x)) return(length(methods::slotNames(x)) > 0L)
    length(x) > 1L || (is.list(x) && length(x) > 0L)
}

# The overview type column: the class, with the size where it helps.
row_type <- function(x) {
    t <- type_name(x)
    s <- size_text(x)
    if (!is.null(s) && (is.data.frame(x) || !is.null(dim(x)) || length(x) > 8L)) paste(t, s) else t
}

# Costs O(n log n) in the user's own names (ls() sorts them). Unlike IPython,
# IRkernel adds nothing to .GlobalEnv per execution (after 200 runs it holds
# the user's names and .pbd_env), so the cost does not grow with the session
# and needs no incremental tracking as rat_helper.py's does.
snap <- function() {
    env <- .GlobalEnv
    names <- ls(env)
    out <- list(vars = length(names), rows = list())
    todo <- utils::head(names, OVERVIEW_ROWS)
    for (k in todo) {
        if (bindingIsActive(k, env)) {
            out$rows[[length(out$rows) + 1L]] <- c(k, "active binding", "(not evaluated)")
            next
        }
        x <- get(k, envir = env, inherits = FALSE)
        row <- limited(SNAP_TIME, c(k, row_type(x), value_text(x, OVERVIEW_VALUE)),
                       function(msg) c(k, type_name(x), sprintf("<%s; slow or failing value>", type_name(x))))
        out$rows[[length(out$rows) + 1L]] <- row
    }
    emit(out)
}

# ---------------------------------------------------------------- inspect

child_row <- function(name, v) {
    list(name, row_type(v), value_text(v, CHILD_VALUE), expandable(v))
}

children <- function(x) {
    rows <- list()
    total <- 0L
    add <- function(name, v) rows[[length(rows) + 1L]] <<- child_row(name, v)
    if (is.environment(x)) {
        nm <- ls(x)
        total <- length(nm)
        for (k in utils::head(nm, CHILD_ROWS)) {
            if (bindingIsActive(k, x)) {
                rows[[length(rows) + 1L]] <- list(k, "active binding", "(not evaluated)", FALSE)
            } else {
                add(k, get(k, envir = x, inherits = FALSE))
            }
        }
    } else if (isS4(x)) {
        sl <- methods::slotNames(x)
        total <- length(sl)
        for (s in utils::head(sl, CHILD_ROWS)) add(paste0("@", s), methods::slot(x, s))
    } else if (is.matrix(x)) {
        total <- nrow(x)
        for (i in seq_len(min(total, CHILD_ROWS))) add(sprintf("[%d,]", i), x[i, ])
    } else if (is.list(x) || (is.atomic(x) && length(x) > 1L)) {
        total <- length(x)
        nm <- names(x)
        for (i in seq_len(min(total, CHILD_ROWS))) {
            label <- if (!is.null(nm) && !is.na(nm[[i]]) && nzchar(nm[[i]])) {
                if (is.list(x)) paste0("$", nm[[i]]) else sprintf("[\"%s\"]", nm[[i]])
            } else if (is.list(x)) sprintf("[[%d]]", i) else sprintf("[%d]", i)
            add(label, x[[i]])
        }
    }
    list(rows = rows, more = max(total - length(rows), 0L))
}

path_text <- function(segs) {
    out <- ""
    for (i in seq_along(segs)) {
        s <- segs[[i]]
        out <- switch(s$t,
            name = if (i == 1L) as.character(s$v) else paste0(out, ".", s$v),
            index = paste0(out, "[", s$v, "]"),
            paste0(out, "[", encodeString(as.character(s$v), quote = "'"), "]"))
    }
    out
}

not_found <- function(msg) structure(list(msg = msg), class = "rat_not_found")

# Index n of x, counting from 1 as R does; negative counts from the end.
by_index <- function(x, n, shown) {
    len <- if (is.matrix(x)) nrow(x) else length(x)
    if (n < 0) n <- len + 1L + n
    if (n < 1 || n > len) return(not_found(sprintf("%s has no index %s (length %d)", shown, n, len)))
    if (is.matrix(x)) x[n, ] else x[[n]]
}

by_name <- function(x, key, shown) {
    if (is.environment(x)) {
        if (!exists(key, envir = x, inherits = FALSE)) return(not_found(sprintf("'%s' is not in %s", key, shown)))
        return(get(key, envir = x, inherits = FALSE))
    }
    if (isS4(x) && key %in% methods::slotNames(x)) return(methods::slot(x, key))
    nm <- names(x)
    if (!is.null(nm) && key %in% nm) return(x[[key]])
    not_found(sprintf("'%s' is not an element of %s", key, shown))
}

is_int_text <- function(s) grepl("^-?[0-9]+$", s)

# One step along the path. A bare name is an element name, an S4 slot, or
# (when it looks like an integer) an index; R names may contain dots, so
# `a.b.c` also tries the element "b.c" (longest first).
step <- function(x, segs, i, shown) {
    s <- segs[[i]]
    if (s$t == "index") return(list(value = by_index(x, as.integer(s$v), shown), used = 1L))
    if (s$t == "key") return(list(value = by_name(x, as.character(s$v), shown), used = 1L))
    j <- i
    while (j < length(segs) && segs[[j + 1L]]$t == "name") j <- j + 1L
    for (k in rev(seq.int(i, j))) {
        key <- paste(vapply(segs[i:k], function(t) as.character(t$v), ""), collapse = ".")
        v <- by_name(x, key, shown)
        if (!inherits(v, "rat_not_found")) return(list(value = v, used = k - i + 1L))
    }
    if (is_int_text(s$v)) return(list(value = by_index(x, as.integer(s$v), shown), used = 1L))
    list(value = by_name(x, as.character(s$v), shown), used = 1L)
}

first_value <- function(segs) {
    j <- 1L
    while (j < length(segs) && segs[[j + 1L]]$t == "name") j <- j + 1L
    if (segs[[1L]]$t != "name") return(NULL)
    for (k in rev(seq_len(j))) {
        nm <- paste(vapply(segs[1:k], function(t) as.character(t$v), ""), collapse = ".")
        if (exists(nm, envir = .GlobalEnv, inherits = FALSE))
            return(list(value = get(nm, envir = .GlobalEnv), used = k, name = nm))
        if (exists(nm, envir = .GlobalEnv))
            return(list(value = get(nm, envir = .GlobalEnv), used = k, name = nm))
        if (nm %in% loadedNamespaces())
            return(list(value = asNamespace(nm), used = k, name = nm))
    }
    NULL
}

help_text <- function(name, fn) {
    env <- environment(fn)
    pkg <- if (is.null(env)) "base" else environmentName(env)
    if (!nzchar(pkg) || pkg == "R_GlobalEnv") return(NULL)
    h <- utils::help(name, package = (pkg))
    if (length(h) == 0L) return(NULL)
    rd <- utils:::.getHelpFile(h[[1L]])
    txt <- utils::capture.output(tools::Rd2txt(rd, options = list(underline_titles = FALSE)))
    start <- grep("^Description:", txt)
    if (length(start) == 0L) return(NULL)
    body <- character(0)
    for (l in txt[-seq_len(start[[1L]])]) {
        if (grepl("^[A-Z][A-Za-z ]*:$", l)) break
        body <- c(body, trimws(l))
    }
    d <- trimws(paste(body, collapse = " "))
    if (!nzchar(d)) return(NULL)
    if (nchar(d) > DOC_MAX) paste0(substr(d, 1L, DOC_MAX - 3L), "...") else d
}

describe <- function(x, shown, name) {
    out <- list(ok = TRUE, path = shown, type = type_name(x))
    if (is.function(x)) {
        out$kind <- "function"
        out$signature <- paste0(name, sub("^function ", "", value_text(x, REPR_MAX)))
        env <- environment(x)
        where <- if (is.null(env)) "base" else environmentName(env)
        if (nzchar(where) && where != "R_GlobalEnv") out$defined_in <- paste0("package:", where)
        out$doc <- tryCatch(help_text(name, x), error = function(e) NULL)
        return(out)
    }
    out$kind <- if (is.environment(x)) "environment" else "variable"
    out$size <- size_text(x)
    if (!is.environment(x)) out$repr <- value_text(x, REPR_MAX)
    ch <- children(x)
    out$children <- ch$rows
    out$more <- ch$more
    out
}

inspect <- function(segs_json) {
    segs <- jsonlite::fromJSON(segs_json, simplifyVector = FALSE)
    res <- limited(INSPECT_TIME, {
        first <- first_value(segs)
        if (is.null(first)) {
            list(ok = FALSE, error = sprintf("%s: not found", path_text(segs[1L])))
        } else {
            x <- first$value
            i <- first$used + 1L
            name <- first$name
            failed <- NULL
            while (i <= length(segs) && is.null(failed)) {
                r <- step(x, segs, i, path_text(segs[seq_len(i - 1L)]))
                if (inherits(r$value, "rat_not_found")) {
                    failed <- list(ok = FALSE, error = sprintf("%s: not found (%s)", path_text(segs[seq_len(i)]),
                                                               r$value$msg))
                } else {
                    x <- r$value
                    name <- as.character(segs[[i + r$used - 1L]]$v)
                    i <- i + r$used
                }
            }
            if (!is.null(failed)) failed else describe(x, path_text(segs), name)
        }
    }, function(msg) list(ok = FALSE, error = sprintf("%s: %s", path_text(segs),
        if (grepl("time limit", msg)) sprintf("inspecting took longer than %gs", INSPECT_TIME) else msg)))
    emit(Filter(Negate(is.null), res))
}
