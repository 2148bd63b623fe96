package dataset

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"mime"
	"os"
	"path/filepath"
	"strings"
)

// MaxImageSide is the largest synthetic image side, in pixels.
const MaxImageSide = 8192

// SyntheticImage is a w×h image, PNG or JPEG, as a data URL: a gradient
// with 16-pixel tiles of seeded colour over it, so it compresses the way a
// picture does rather than as noise or as a flat field.
func SyntheticImage(w, h int, format string, r *rand.Rand) (string, error) {
	w, h = min(max(w, 1), MaxImageSide), min(max(h, 1), MaxImageSide)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	base := [3]uint8{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256))}
	for ty := 0; ty < h; ty += 16 {
		for tx := 0; tx < w; tx += 16 {
			tile := [3]int{r.IntN(64) - 32, r.IntN(64) - 32, r.IntN(64) - 32}
			for y := ty; y < min(ty+16, h); y++ {
				for x := tx; x < min(tx+16, w); x++ {
					c := color.RGBA{A: 255}
					px := []*uint8{&c.R, &c.G, &c.B}
					for k, p := range px {
						v := int(base[k]) + tile[k] + (x*96)/w + (y*96)/h - 96
						*p = uint8(min(max(v, 0), 255))
					}
					img.SetRGBA(x, y, c)
				}
			}
		}
	}
	var buf bytes.Buffer
	var err error
	mt := "image/png"
	switch format {
	case "jpeg", "jpg":
		mt = "image/jpeg"
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85})
	default:
		err = png.Encode(&buf, img)
	}
	if err != nil {
		return "", err
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// ImageURL is an input file's image as a request sends it: a URL
// (http, https or data) as it is, or a file, read and sent as a data URL
// of its type (by its extension). A relative path is the input file's
// folder's.
func ImageURL(ref, base string) (string, error) { return mediaURL(ref, base, imageMedia) }

// VideoURL is an input file's video as a request sends it, as ImageURL
// is (.mp4, .webm, .mov, .mkv files).
func VideoURL(ref, base string) (string, error) { return mediaURL(ref, base, videoMedia) }

// imageFile and videoFile are ref's file and type ("" for a URL),
// checked to be there.
func imageFile(ref, base string) (string, string, error) { return mediaFile(ref, base, imageMedia) }
func videoFile(ref, base string) (string, string, error) { return mediaFile(ref, base, videoMedia) }

// A media kind: its name in errors, the files it takes and their types.
type media struct {
	name, want string
	types      func(ext string) string
}

var (
	imageMedia = media{"image", ".png, .jpg, .jpeg, .gif or .webp", func(ext string) string {
		if mt := mime.TypeByExtension(ext); strings.HasPrefix(mt, "image/") {
			return mt
		}
		return ""
	}}
	videoMedia = media{"video", ".mp4, .webm, .mov or .mkv", func(ext string) string {
		return map[string]string{".mp4": "video/mp4", ".webm": "video/webm", ".mov": "video/quicktime", ".mkv": "video/x-matroska"}[ext]
	}}
)

func mediaURL(ref, base string, k media) (string, error) {
	path, mt, err := mediaFile(ref, base, k)
	if path == "" || err != nil {
		return ref, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", k.name, ref, err)
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b), nil
}

func mediaFile(ref, base string, k media) (path, mediaType string, err error) {
	if strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://") || strings.HasPrefix(ref, "data:") {
		return "", "", nil
	}
	path = ref
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	mt := k.types(strings.ToLower(filepath.Ext(path)))
	if mt == "" {
		return "", "", fmt.Errorf("%s %q: want a %s file, or an http(s) or data URL", k.name, ref, k.want)
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return "", "", fmt.Errorf("%s %q: no such file (a relative path is the input file's folder's)", k.name, ref)
	}
	return path, mt, nil
}
