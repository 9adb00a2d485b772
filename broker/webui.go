package broker

import (
	"net/http"
)

// MountWebUI serves page, the built-in chat page of lisa serve --webui, at
// GET / and its assets at GET /webui/...; call it before ListenAndServe.
// The page and its assets are public (the API calls the page makes carry
// the API key, checked as every other API call); the requests are counted
// and logged under the route "webui".
func (s *Server) MountWebUI(page http.Handler) {
	h := s.handle("webui", false, func(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
		page.ServeHTTP(w, r)
		return nil
	})
	s.router.GET("/", h)
	s.router.GET("/webui/*file", h)
}
