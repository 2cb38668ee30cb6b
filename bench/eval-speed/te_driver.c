/* A trec_eval front end over trec_eval's own functions as compiled (optimised) in the
 * pytrec-eval-terrier wheel, for bench/eval-speed (see fetch-trec-eval.sh for why: no registry
 * ships trec_eval's sources, and the one trec_eval binary a registry ships is built without
 * optimisation). This file is only the command line: it reads the run and the qrels with
 * trec_eval's te_get_trec_results / te_get_qrels, runs each requested measure's init, calc, acc,
 * calc_avg and print procedures from te_trec_measures, and prints the `all` lines the way
 * trec_eval does. The structures below declare the layout of trec_eval 9/10's trec_eval.h (its
 * public interface: EPI, TREC_EVAL, RESULTS, REL_INFO, TREC_MEAS), field for field.
 *
 *   te_driver EXTENSION.so [-m MEASURE[.PARAMS]]... QRELS RUN
 *
 * Only what bench/eval-speed asks for: -m options, no -q, -c, -J, -l or -M. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char *measure_name; char *parameters; } MEAS_ARG;
typedef struct {
    long query_flag, summary_flag, debug_level;
    char *debug_query;
    long relation_flag, average_complete_flag, judged_docs_only_flag, num_docs_in_coll,
        relevance_level, max_num_docs_per_topic;
    char *rel_info_format, *results_format;
    long zscore_flag;
    MEAS_ARG *meas_arg;
} EPI;
typedef struct { char *name; double value; } TREC_EVAL_VALUE;
typedef struct {
    char *qid;
    long num_queries;
    TREC_EVAL_VALUE *values;
    long num_values, max_num_values;
} TREC_EVAL;
typedef struct { char *qid, *run_id, *ret_format; void *q_results; } RESULTS;
typedef struct { long num_q_results, max_num_q_results; RESULTS *results; } ALL_RESULTS;
typedef struct { char *qid, *rel_format; void *q_rel_info; } REL_INFO;
typedef struct { long num_q_rels, max_num_q_rels; REL_INFO *rel_info; } ALL_REL_INFO;
typedef struct trec_meas {
    char *name, *explanation;
    int (*init_meas)(EPI *, struct trec_meas *, TREC_EVAL *);
    int (*calc_meas)(const EPI *, const REL_INFO *, const RESULTS *, const struct trec_meas *,
                     TREC_EVAL *);
    int (*acc_meas)(const EPI *, const struct trec_meas *, const TREC_EVAL *, TREC_EVAL *);
    int (*calc_avg_meas)(const EPI *, const struct trec_meas *, const ALL_REL_INFO *,
                         TREC_EVAL *);
    int (*print_single_meas)(const EPI *, const struct trec_meas *, const TREC_EVAL *);
    int (*print_final_and_cleanup_meas)(const EPI *, struct trec_meas *, TREC_EVAL *);
    void *meas_params;
    long eval_index;
} TREC_MEAS;

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) { fprintf(stderr, "te_driver: %s not in the extension\n", name); exit(2); }
    return p;
}

static int by_qid_results(const void *a, const void *b) {
    return strcmp(((const RESULTS *)a)->qid, ((const RESULTS *)b)->qid);
}
static int by_qid_rels(const void *a, const void *b) {
    return strcmp(((const REL_INFO *)a)->qid, ((const REL_INFO *)b)->qid);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: te_driver EXTENSION.so [-m MEASURE[.PARAMS]]... QRELS RUN\n");
        return 2;
    }
    /* The extension refers to the Python C API; a Python that loads it provides those symbols,
       so load libpython first (its path in TE_LIBPYTHON); nothing here calls into Python. */
    const char *libpython = getenv("TE_LIBPYTHON");
    if (libpython && !dlopen(libpython, RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "te_driver: %s\n", dlerror());
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!lib) { fprintf(stderr, "te_driver: %s\n", dlerror()); return 2; }
    TREC_MEAS **measures = sym(lib, "te_trec_measures");
    int num_measures = *(int *)sym(lib, "te_num_trec_measures");
    int (*get_results)(EPI *, char *, ALL_RESULTS *) = sym(lib, "te_get_trec_results");
    int (*get_qrels)(EPI *, char *, ALL_REL_INFO *) = sym(lib, "te_get_qrels");

    MEAS_ARG *args = calloc((size_t)argc, sizeof(MEAS_ARG));
    int num_args = 0, i = 2;
    for (; i + 1 < argc && strcmp(argv[i], "-m") == 0; i += 2) {
        char *name = strdup(argv[i + 1]), *dot = strchr(name, '.');
        if (dot) { *dot = '\0'; args[num_args].measure_name = name;
                   args[num_args++].parameters = dot + 1; }
        int found = 0;
        for (int m = 0; m < num_measures; m++)
            if (strcmp(measures[m]->name, name) == 0) { measures[m]->eval_index = -2; found = 1; }
        if (!found) { fprintf(stderr, "te_driver: no measure %s\n", name); return 2; }
    }
    if (argc - i != 2) { fprintf(stderr, "te_driver: QRELS and RUN expected last\n"); return 2; }
    EPI epi = {0, 1, 0, NULL, 1, 0, 0, 0, 1, LONG_MAX, "qrels", "trec_results", 0,
               num_args ? args : NULL};

    ALL_REL_INFO rels = {0};
    ALL_RESULTS results = {0};
    if (get_qrels(&epi, argv[i], &rels) < 0 || get_results(&epi, argv[i + 1], &results) < 0) {
        fprintf(stderr, "te_driver: cannot read %s or %s\n", argv[i], argv[i + 1]);
        return 2;
    }
    TREC_EVAL accum = {0}, q_eval = {0};
    for (int m = 0; m < num_measures; m++)
        if (measures[m]->eval_index == -2 && measures[m]->init_meas(&epi, measures[m], &accum) < 0)
            return 2;
    q_eval.values = malloc((size_t)accum.num_values * sizeof(TREC_EVAL_VALUE));
    memcpy(q_eval.values, accum.values, (size_t)accum.num_values * sizeof(TREC_EVAL_VALUE));
    q_eval.num_values = q_eval.max_num_values = accum.num_values;

    qsort(results.results, (size_t)results.num_q_results, sizeof(RESULTS), by_qid_results);
    qsort(rels.rel_info, (size_t)rels.num_q_rels, sizeof(REL_INFO), by_qid_rels);
    long r = 0;
    for (long q = 0; q < results.num_q_results; q++) {
        RESULTS *res = &results.results[q];
        while (r < rels.num_q_rels && strcmp(rels.rel_info[r].qid, res->qid) < 0) r++;
        if (r >= rels.num_q_rels || strcmp(rels.rel_info[r].qid, res->qid) != 0) continue;
        q_eval.qid = res->qid;
        for (long v = 0; v < q_eval.num_values; v++) q_eval.values[v].value = 0.0;
        for (int m = 0; m < num_measures; m++)
            if (measures[m]->eval_index >= 0 &&
                measures[m]->calc_meas(&epi, &rels.rel_info[r], res, measures[m], &q_eval) < 0)
                return 2;
        for (int m = 0; m < num_measures; m++)
            if (measures[m]->eval_index >= 0)
                measures[m]->acc_meas(&epi, measures[m], &q_eval, &accum);
        accum.num_queries++;
    }
    accum.qid = "all";
    for (int m = 0; m < num_measures; m++)
        if (measures[m]->eval_index >= 0)
            measures[m]->calc_avg_meas(&epi, measures[m], &rels, &accum);
    for (int m = 0; m < num_measures; m++)
        if (measures[m]->eval_index >= 0)
            measures[m]->print_final_and_cleanup_meas(&epi, measures[m], &accum);
    return 0;
}
