# Builds viewer_page.cc: viewer.html with viewer.css and viewer.js inlined, split at the data
# placeholder into kViewerHead and kViewerTail. Run with -DSOURCE_DIR=... -DOUTPUT=...
file(READ ${SOURCE_DIR}/viewer.html html)
file(READ ${SOURCE_DIR}/viewer.css css)
file(READ ${SOURCE_DIR}/viewer.js js)
string(REPLACE "/*@STYLE@*/" "${css}" html "${html}")
string(REPLACE "/*@SCRIPT@*/" "${js}" html "${html}")
string(FIND "${html}" "@DATA@" data_at)
if(data_at EQUAL -1)
  message(FATAL_ERROR "viewer.html has no @DATA@ placeholder")
endif()
string(SUBSTRING "${html}" 0 ${data_at} head)
math(EXPR tail_at "${data_at} + 6")
string(SUBSTRING "${html}" ${tail_at} -1 tail)
string(FIND "${html}" ")nanomx_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "the viewer sources contain the raw-string delimiter )nanomx_page\"")
endif()
file(WRITE ${OUTPUT}
  "// Generated from tools/nanomx-trace/viewer by embed_viewer.cmake. Do not edit.\n"
  "#include \"view.h\"\n"
  "namespace nanomx::trace {\n"
  "const char* const kViewerHead = R\"nanomx_page(${head})nanomx_page\";\n"
  "const char* const kViewerTail = R\"nanomx_page(${tail})nanomx_page\";\n"
  "}  // namespace nanomx::trace\n")
