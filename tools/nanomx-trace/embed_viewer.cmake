# Builds viewer_page.cc: viewer.html with viewer.css and its scripts inlined, split at the data
# placeholder into kViewerHead and kViewerTail. Run with -DSOURCE_DIR=... -DOUTPUT=...
file(READ ${SOURCE_DIR}/viewer.html html)
file(READ ${SOURCE_DIR}/viewer.css css)
string(REPLACE "/*@STYLE@*/" "${css}" html "${html}")
# viewer.html names each script as <script src="NAME.js"></script>, in load order; each becomes
# an inline <script> with the file's text. The written page is one file opened from file://,
# and its Content-Security-Policy allows inline scripts only.
string(REGEX MATCHALL "<script src=\"[A-Za-z0-9_.-]+\"></script>" script_tags "${html}")
if(NOT script_tags)
  message(FATAL_ERROR "viewer.html names no script as <script src=\"NAME.js\"></script>")
endif()
foreach(tag IN LISTS script_tags)
  string(REGEX REPLACE "^<script src=\"([^\"]+)\"></script>$" "\\1" name "${tag}")
  file(READ ${SOURCE_DIR}/${name} js)
  string(REPLACE "${tag}" "<script>${js}</script>" html "${html}")
endforeach()
string(FIND "${html}" "<script src=" unembedded)
if(NOT unembedded EQUAL -1)
  message(FATAL_ERROR "viewer.html has a <script src=...> that embed_viewer.cmake cannot inline")
endif()
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
