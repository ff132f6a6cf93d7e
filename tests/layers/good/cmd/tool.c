#include <cjson/cJSON.h>

#include "formats/any.h"
#include "jobs/jobs.h"

int main(int argc, char **argv) {
    return argc > 1 ? lc_job_convert(argv[1]) : lc_any_load(argv[0]);
}
