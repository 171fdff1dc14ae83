# Whole jobs (docs/jobs.md): the rank program tests/integration/job_report.sh
# runs as each rank of a hand-made launch (tests/programs/job_rank.c).

TEST_DEPS += $(BUILD)/tests/programs/job_rank

$(BUILD)/tests/programs/job_rank: tests/programs/job_rank.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $<
