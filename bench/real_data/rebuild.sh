#!/bin/sh
# Rebuild bench/real_data/<short_name> from fresh fetches (fetch github:<owner>/<repo> first; it prints the
# mirror's git dir, /work/.mirror/<owner>+<repo>/repo). Only data/ and meta/ are taken (no videos).
# git may print "error: invalid object ... assets/ACT_demo.gif" for the ACT repo: that file (a >4 MiB blob) is
# missing from the snapshot and is not under dataset/; git archive still exits 0 and the dataset is complete.
set -eu
OUT=${OUT:-$(dirname "$0")}
take() {  # git_dir commit path_in_repo short_name
    rm -rf "$OUT/$4" /tmp/rebuild_$4 && mkdir -p /tmp/rebuild_$4
    git --git-dir="$1" archive "$2" "$3/data" "$3/meta" | tar -x -C /tmp/rebuild_$4
    mv "/tmp/rebuild_$4/$3" "$OUT/$4" && rm -rf /tmp/rebuild_$4
}
take /work/.mirror/Chethantu+Robothon_Final/repo 1fe05a123d7b02f7e9b39a09cdbe79243600c374 \
     data/pick_place so101_robothon_pickplace
take /work/.mirror/chenfei-source+ACT-robot-manipulation/repo befd64aa7765c72358fa61869b7e675a5e6bbffd \
     dataset piper_grape_plate
take /work/.mirror/Ghosty2003+Techin517/repo 3d659b17931c047a0a82c8fa73cc69d78f9a46dc \
     huggingface/lerobot/project/bi_so101_test bi_so101_clean_desk
# SO-101 stack (issue 26, HELD BACK: run once, after tuning): data/ and meta/ only (no licence stated; not vendored).
# git may print "error: invalid object ... Wrist_Cam_Mount_32x32_UVC_Module_SO101.stl": a >4 MiB blob missing from
# the snapshot, outside real_data/stack; the dataset is complete.
take /work/.mirror/Gotham-Zolio+so101-grasp-cube/repo c9bc3e6fd1a4acdeae601388a1f4db841507e760 \
     real_data/stack so101_grasp_cube_stack
for f in $(find "$OUT/so101_grasp_cube_stack" -name '*.parquet'); do
    [ "$(head -c4 "$f")" = PAR1 ] || { echo "not parquet: $f" >&2; exit 1; }
done
# SO-101 record-test (issue 27): data/ and meta/ only (no licence stated; not vendored)
rm -rf "$OUT/so101_record_test" && mkdir -p "$OUT/so101_record_test"
git --git-dir=/work/.mirror/SamueleSandrini+record-test/repo archive -o "$OUT/so101_record_test.tar" \
    c6d0de303c6f4c451eb103222af2fff11d0e9963 data meta
tar -x -C "$OUT/so101_record_test" -f "$OUT/so101_record_test.tar" && rm "$OUT/so101_record_test.tar"
# bimanual 7-DoF arms with two 10-joint hands (issue 27, held back): data/ and meta/ only (no licence, no card)
rm -rf "$OUT/dexhands_open_50" && mkdir -p "$OUT/dexhands_open_50"
git --git-dir=/work/.mirror/yipiandanxinxiangyangkai+open_50/repo archive -o "$OUT/open_50.tar" \
    6fbd8285973055ac1934f6bf73059dc1bbcbdd36 data meta
tar -x -C "$OUT/dexhands_open_50" -f "$OUT/open_50.tar" && rm "$OUT/open_50.tar"
# the G1 humanoid (issue 27): data/, meta/ and its MIT LICENSE, no videos (git may say the videos are missing)
rm -rf "$OUT/g1_inspire" && mkdir -p "$OUT/g1_inspire"
git --git-dir=/work/.mirror/YifanTian07+G1-policy-train/repo archive d1d3bb4 data meta LICENSE | tar -x -C "$OUT/g1_inspire"
# every parquet must be real (starts with PAR1), not a Git LFS pointer
for f in $(find "$OUT/so101_robothon_pickplace" "$OUT/piper_grape_plate" "$OUT/bi_so101_clean_desk" -name '*.parquet'); do
    [ "$(head -c4 "$f")" = PAR1 ] || { echo "not parquet: $f" >&2; exit 1; }
done
