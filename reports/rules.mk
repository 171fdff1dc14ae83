# The HTML report's page (reports/web/), built into a header that
# reports/html.c includes:
#
#   reports/web/node_modules   `npm ci` from package-lock.json (exact versions),
#                              rerun only when package.json or the lock file
#                              changes (stamp .gcspy-installed): with
#                              node_modules present, `make` needs no network
#   $(BUILD)/gen/html_page.h   reports/web/build.mjs: page.html with the
#                              libraries and src/*.js inlined, as C literals
#
# analyzer/rules.mk compiles reports/*.c; the generated header is added to
# html.o's prerequisites and include path here.

HTML_WEB := reports/web
HTML_NPM_STAMP := $(HTML_WEB)/node_modules/.gcspy-installed
HTML_PAGE_H := $(BUILD)/gen/html_page.h
HTML_WEB_SRCS := $(HTML_WEB)/build.mjs $(HTML_WEB)/page.html $(HTML_WEB)/style.css \
                 $(sort $(wildcard $(HTML_WEB)/src/*.js))

$(HTML_NPM_STAMP): $(HTML_WEB)/package.json $(HTML_WEB)/package-lock.json
	@command -v npm >/dev/null || { echo "gcspy: npm is needed to build the HTML report (make deps)" >&2; exit 1; }
	cd $(HTML_WEB) && npm ci --no-audit --no-fund --prefer-offline --loglevel=error
	@touch $@

$(HTML_PAGE_H): $(HTML_WEB_SRCS) $(HTML_NPM_STAMP)
	node $(HTML_WEB)/build.mjs $@

$(BUILD)/obj/reports/html.o: $(HTML_PAGE_H)
$(BUILD)/obj/reports/html.o: ALL_CFLAGS += -I$(BUILD)/gen
